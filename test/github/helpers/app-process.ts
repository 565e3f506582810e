// The App in a child process, for the crash test: started like the harness does (Docker
// sandbox), GitHub mocked with nock inside this process, every status comment body printed as
// a JSON line on stdout. The parent kills it with SIGKILL mid-run.
import nock from 'nock';
import { labeledPayload } from './payloads.js';
import { mockGitHub, mockStatusComment, startHarness } from './app-harness.js';

const [root, dataDir, modelUrl] = process.argv.slice(2) as [string, string, string];
nock.disableNetConnect();
nock.enableNetConnect(/^(127\.0\.0\.1|localhost)(:\d+)?$/);
const gh = mockGitHub();
mockStatusComment(gh, 1);
const push = gh.statusBodies.push.bind(gh.statusBodies);
gh.statusBodies.push = (...bodies: string[]) => {
  for (const body of bodies) process.stdout.write(`${JSON.stringify({ status: body })}\n`);
  return push(...bodies);
};
const harness = await startHarness({
  root,
  dataDir,
  modelUrl,
  sandbox: 'docker',
  python: 'python3',
  throttleMs: 0,
});
const status = await harness.deliver(
  'issues',
  labeledPayload({ sender: { login: 'Codertocat', id: 21031067 } }),
  'crash-1',
);
process.stdout.write(`${JSON.stringify({ delivered: status })}\n`);
