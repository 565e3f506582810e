// SIGTERM/SIGINT in the middle of a run: the pipeline cleans up (sandbox, its processes, the
// work directory), then the signal takes its default effect.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = mkdtempSync(path.join(tmpdir(), 'run-signal-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function processesWith(text: string): string[] {
  const out = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(text) && !line.includes('ps -eo'));
}

describe('runPipeline under a process signal', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    'cleans up on %s, then exits by the signal',
    async (sig) => {
      const dir = path.join(root, sig);
      const data = path.join(dir, 'data');
      const local = path.join(dir, 'local');
      mkdirSync(local, { recursive: true });
      // A unique sleep duration marks the agent's command in the process table.
      const marker = `${600 + Math.floor(Math.random() * 1000)}.${sig === 'SIGTERM' ? 1 : 2}`;
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          path.join(import.meta.dirname, 'run-signal-child.ts'),
          data,
          local,
          path.join(dir, 'src'),
          marker,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
        (resolve) => child.on('exit', (code, signal) => resolve({ code, signal })),
      );
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (c: Buffer) => {
          stdout += c.toString();
          if (stdout.includes('phase agent') && processesWith(`sleep ${marker}`).length > 0)
            resolve();
        });
        const poll = setInterval(() => {
          if (stdout.includes('phase agent') && processesWith(`sleep ${marker}`).length > 0) {
            clearInterval(poll);
            resolve();
          }
        }, 100);
        void exited.then(() => {
          clearInterval(poll);
          reject(new Error(`child exited early: ${stdout} ${stderr}`));
        });
      });
      expect(readdirSync(path.join(data, 'runs'))).toEqual(['signal-child']);
      expect(readdirSync(local)).toHaveLength(1);

      child.kill(sig);
      const result = await exited;
      expect(result, stderr).toEqual({ code: null, signal: sig });
      expect(stdout).not.toContain('finished without the signal');
      expect(stdout).toContain('phase cleanup');
      expect(readdirSync(path.join(data, 'runs'))).toEqual([]);
      expect(readdirSync(local)).toEqual([]);
      expect(processesWith(`sleep ${marker}`)).toEqual([]);
      expect(existsSync(path.join(data, 'out', 'trajectory.json'))).toBe(true);
    },
    60_000,
  );
});
