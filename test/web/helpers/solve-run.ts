// A real `frognano solve` (local sandbox, scripted model on a socket) whose trajectory.html the
// browser tests open.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { solve } from '../../../src/commands/solve.js';
import { startScriptedModelServer, type ScriptStep } from '../../support/scripted-model-server.js';
import { createPythonRepo } from '../../support/python-repo.js';

export interface SolvedRun {
  work: string;
  outDir: string;
  html: string;
  code: number;
  stderr: string[];
}

export async function solveScripted(options: {
  script: ScriptStep[];
  issue: string;
  extraFiles?: Record<string, string>;
}): Promise<SolvedRun> {
  const work = await mkdtemp(path.join(tmpdir(), 'frognano-web-'));
  const repo = createPythonRepo(work, options.extraFiles);
  const model = await startScriptedModelServer({ script: options.script });
  const outDir = path.join(work, 'out');
  const issueFile = path.join(work, 'issue.md');
  await writeFile(issueFile, options.issue);
  const stderr: string[] = [];
  try {
    const code = await solve(
      {
        repo: repo.dir,
        issueFile,
        out: outDir,
        sandbox: 'local',
        modelUrl: model.baseUrl,
      },
      {
        stderr: (line) => stderr.push(line),
        env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'silent' },
      },
    );
    return { work, outDir, html: path.join(outDir, 'trajectory.html'), code, stderr };
  } finally {
    await model.close();
  }
}
