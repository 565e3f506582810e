// Child process for run-signal.test.ts: one pipeline run with the local sandbox whose agent
// sits in a long Bash command, so the parent can send SIGTERM/SIGINT in the middle of it.
import pino from 'pino';
import { runPipeline } from '../../src/runner/run.js';
import { createPythonRepo } from '../support/python-repo.js';
import { startScriptedModelServer, toolCall } from '../support/scripted-model-server.js';

const [dataDir, localTempRoot, repoParent, marker] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
];
const server = await startScriptedModelServer({
  script: [toolCall('Bash', { command: `sleep ${marker}` })],
});
const repo = createPythonRepo(repoParent);
await runPipeline(
  {
    runId: 'signal-child',
    instanceId: 'fixture/calc#9',
    repo: repo.dir,
    issueText: 'x',
    sandbox: 'local',
    outDir: `${dataDir}/out`,
    onProgress: (event) => {
      if (event.kind === 'phase') process.stdout.write(`phase ${event.phase}\n`);
    },
  },
  {
    modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
    dataDir,
    localTempRoot,
    logger: pino({ level: 'silent' }),
  },
);
// Reached only if the signal did not end the process: that would be a failure.
process.stdout.write('finished without the signal\n');
await server.close();
