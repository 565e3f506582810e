// The App in a child process, for the crash test: started like the harness does (Docker
// sandbox), GitHub served by the parent's strict loopback fake. The parent kills it with
// SIGKILL mid-run.
import nock from 'nock';
import { labeledPayload } from './payloads.js';
import { startHarness } from './app-harness.js';

// The harness imports nock; its interception would wrap the Docker engine's exec streams.
nock.restore();
const [root, dataDir, modelUrl, githubUrl] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
];
const harness = await startHarness({
  root,
  dataDir,
  modelUrl,
  sandbox: 'docker',
  python: 'python3',
  throttleMs: 0,
  env: { GITHUB_API_URL: githubUrl },
});
const status = await harness.deliver(
  'issues',
  labeledPayload({ sender: { login: 'Codertocat', id: 21031067 } }),
  'crash-1',
);
process.stdout.write(`${JSON.stringify({ delivered: status })}\n`);
