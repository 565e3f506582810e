// The default sandbox image has the tools the pipeline and the model's commands rely on,
// whichever recipe built it (the global setup builds it when missing).
import { readFile } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../src/sandbox/docker-sandbox.js';
import { describeDocker } from '../support/docker-engine.js';

describe('the sandbox recipe', () => {
  it('has one image name: build-offline.sh defaults to DEFAULT_SANDBOX_IMAGE', async () => {
    const script = await readFile('sandbox/build-offline.sh', 'utf8');
    expect(script).toContain(`IMAGE="\${FROGNANO_SANDBOX_IMAGE:-${DEFAULT_SANDBOX_IMAGE}}"`);
    expect(await readFile('sandbox/Dockerfile', 'utf8')).toContain(
      `docker build -t ${DEFAULT_SANDBOX_IMAGE} sandbox/`,
    );
  });

  it('has one content: both builds run setup-image.sh on Debian bookworm', async () => {
    const dockerfile = await readFile('sandbox/Dockerfile', 'utf8');
    const offline = await readFile('sandbox/build-offline.sh', 'utf8');
    expect(dockerfile).toMatch(/^ARG BASE=debian:(12|bookworm)[-\w.@:]*$/m);
    expect(dockerfile).toMatch(/^RUN sh \/tmp\/recipe\/setup-image\.sh/m);
    expect(offline).toMatch(/^SUITE=bookworm$/m);
    expect(offline).toMatch(/chroot "\$root" \/bin\/sh \/tmp\/recipe\/setup-image\.sh/);
  });
});

describeDocker(`the sandbox image ${DEFAULT_SANDBOX_IMAGE}`, () => {
  it('runs Python (venv, pip install -e), pytest, git, gcc, make, node and npm as uid 1000', async () => {
    const script = String.raw`
set -e
test "$(id -u)" = 1000
cd "$(mktemp -d)"
printf 'from setuptools import setup\nsetup(name="tiny", version="0.1", py_modules=["tiny"])\n' > setup.py
printf 'def answer():\n    return 42\n' > tiny.py
printf 'from tiny import answer\n\ndef test_answer():\n    assert answer() == 42\n' > test_tiny.py
# Editable install straight into the user site (Debian's pip allows it here), then pytest sees it.
pip install -q -e . && (cd / && python3 -c 'import tiny; assert tiny.answer() == 42')
pytest -q -p no:cacheprovider test_tiny.py | tail -n 1
# And in a venv, as a repository's setup would do.
python3 -m venv --system-site-packages venv && venv/bin/pip install -q -e . && venv/bin/python -c 'import tiny'
git init -q r && git -C r -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m init && echo git-ok
printf 'int main(void) { return 7; }\n' > c.c && gcc -o c c.c && (./c || echo "gcc-ok $?")
printf 'all:\n\t@echo make-ok\n' > Makefile && make -s
node -e 'console.log("node-ok " + (process.versions.node.split(".")[0] >= 18))'
npm --version >/dev/null && mkdir js && cd js && npm init -y >/dev/null && npm pkg set scripts.test='echo npm-test-ok' && npm test --silent
`;
    const output = await runInImage(script);
    expect(output).toContain('1 passed');
    expect(output).toContain('git-ok');
    expect(output).toContain('gcc-ok 7');
    expect(output).toContain('make-ok');
    expect(output).toContain('node-ok true');
    expect(output).toContain('npm-test-ok');
  }, 120_000);
});

/** Runs `script` with bash in a fresh container of the default image, without network. */
async function runInImage(script: string): Promise<string> {
  const docker = connectDocker();
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  const [result] = (await docker.run(DEFAULT_SANDBOX_IMAGE, ['bash', '-c', script], out, {
    HostConfig: { AutoRemove: true, NetworkMode: 'none' },
    Tty: true,
    // A terminal would make node colour its output.
    Env: ['NO_COLOR=1'],
  })) as [{ StatusCode: number }];
  const text = Buffer.concat(chunks).toString('utf8');
  if (result.StatusCode !== 0) throw new Error(`exit ${result.StatusCode}:\n${text}`);
  return text;
}
