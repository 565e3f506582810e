// Differential check against Leaf's own tool runner (microsoft/FrogNano,
// frognano/harness/leaf/tool_runner.py). Its code is not part of this repository: point
// LEAF_REFERENCE_RUNNER at a checkout's copy to run this suite, e.g.
//   LEAF_REFERENCE_RUNNER=~/FrogNano/frognano/harness/leaf/tool_runner.py npx vitest run test/leaf/tools-reference.test.ts
// Every call runs through the reference (python3, cwd = the sandbox workdir) and through
// executeTool on a LocalSandbox over the same tree; observations and the final tree must be
// identical. One deliberate difference is left out: Bash output that is not valid UTF-8
// (Leaf raises UnicodeDecodeError; we replace the bad bytes with U+FFFD). Another is left out
// of the calls: content that cannot be encoded (a lone surrogate) fails in both, but Leaf has
// already created or truncated the file by then, while we leave it untouched.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/leaf/sandbox.js';
import { executeTool } from '../../src/leaf/tools.js';
import { createLocalSandbox, type LocalSandbox } from '../../src/sandbox/local-sandbox.js';
import { dockerSandboxFactory } from '../support/docker-sandbox-factory.js';
import { dockerReady } from '../support/docker-engine.js';

const runner = process.env.LEAF_REFERENCE_RUNNER;
if (!runner) {
  console.warn(
    'SKIPPING the Leaf reference comparison: set LEAF_REFERENCE_RUNNER to tool_runner.py',
  );
}

const files: Record<string, string | Buffer> = {
  'a.py': 'print(1)\nx = 1\nx = 1\n',
  'crlf.txt': 'one\r\ntwo\rthree\nfour\x0bfive\x1cs\u2028t\x85u',
  'bad.bin': Buffer.from([0x61, 0xff, 0x0a, 0xed, 0xa0, 0x80, 0x0a, 0xef, 0xbb, 0xbf, 0x62]),
  'src/m.py': 'def f():\n    return 2\n',
  'src/.h.py': 'h',
  '.hidden': 'x',
  'big.txt': Array.from({ length: 3000 }, (_, i) => `line ${i} ${'é'.repeat(5)}`).join('\n'),
  'emoji.txt': '😀😀 x 😀\n',
  'dollar.txt': 'a $& b $1 c',
  'x[1]/in.txt': 'i',
  'x1/one.txt': 'o',
  'uni/ü.py': 'u',
  'uni/\uE000.py': 'p',
  'uni/😀.py': 'e',
  'uni/z.py': 'z',
  'uni/new\nline.py': 'n',
  'loopdir/f.py': 'f',
};

const calls: Array<[string, string | null]> = [
  ['Read', '{"file_path": "a.py"}'],
  ['Read', '{"path": "a.py"}'],
  ['Read', '{"file_path": "", "path": "a.py"}'],
  ['Read', '{"file_path": 0, "path": "src/m.py"}'],
  ['Read', '{}'],
  ['Read', 'not json'],
  ['Read', '[1,2]'],
  ['Read', null],
  ['Read', '{"file_path": "missing.py"}'],
  ['Read', '{"file_path": "src"}'],
  ['Read', '{"file_path": "src/../a.py"}'],
  ['Read', '{"file_path": "./src//m.py"}'],
  ['Read', '{"file_path": "ln/m.py"}'],
  ['Read', '{"file_path": "outside"}'],
  ['Read', '{"file_path": "/etc/hostname"}'],
  ['Read', '{"file_path": "crlf.txt"}'],
  ['Read', '{"file_path": "bad.bin"}'],
  ['Read', '{"file_path": "big.txt"}'],
  ['Read', '{"file_path": "big.txt", "offset": 2990}'],
  ['Read', '{"file_path": "big.txt", "offset": "10", "limit": "3"}'],
  ['Read', '{"file_path": "big.txt", "offset": 2.7, "limit": true}'],
  ['Read', '{"file_path": "big.txt", "offset": -5, "limit": 2}'],
  ['Read', '{"file_path": "big.txt", "offset": 99999, "limit": 2}'],
  ['Read', '{"file_path": "big.txt", "offset": "abc"}'],
  ['Read', '{"file_path": "big.txt", "limit": [1]}'],
  ['Read', '{"file_path": "big.txt", "limit": -1, "offset": ""}'],
  ['Read', '{"file_path": "big.txt", "offset": 1e400}'],
  ['Read', '{"file_path": "big.txt", "offset": NaN}'],
  ['Read', '{"file_path": "missing.py", "offset": "abc"}'],
  ['Read', '{"file_path": "emoji.txt"}'],
  ['Read', '{"file_path": "~/nothing"}'],
  ['Read', '{"file_path": "~root/nothing"}'],
  ['Read', '{"file_path": "~nosuchuser123/x"}'],
  ['Read', '{"file_path": "a\\u0000b"}'],
  ['Read', '{"file_path": ["a.py"]}'],
  ['Read', '{"file_path": "."}'],
  ['Write', '{"file_path": "new/dir/f.txt", "content": "héllo 😀\\n"}'],
  ['Write', '{"file_path": "n1.txt", "content": null}'],
  ['Write', '{"file_path": "n2.txt", "content": 1.0}'],
  ['Write', '{"file_path": "n3.txt", "content": [1, {"a": null}, "x\'y"]}'],
  ['Write', '{"file_path": "n4.txt"}'],
  ['Write', '{"file_path": "n5.txt", "content": 12345678901234567890123}'],
  ['Write', '{"file_path": "a.py/x.txt", "content": "x"}'],
  ['Write', '{"file_path": "a.py/sub/x.txt", "content": "x"}'],
  ['Write', '{"file_path": "src", "content": "x"}'],
  ['Write', '{"file_path": "ln/w.py", "content": "w"}'],
  ['Write', '{"file_path": "../escape-leafdiff.txt", "content": "x"}'],
  ['Write', '{"content": "x"}'],
  ['Read', '{"file_path": "n3.txt"}'],
  ['Edit', '{"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}'],
  [
    'Edit',
    '{"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2", "replace_all": "yes"}',
  ],
  [
    'Edit',
    '{"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2", "replace_all": "no"}',
  ],
  ['Edit', '{"file_path": "a.py", "old_string": "zzz", "new_string": "x"}'],
  ['Edit', '{"file_path": "a.py", "old_string": "", "new_string": "x"}'],
  ['Edit', '{"file_path": "missing.py", "old_string": "", "new_string": "x"}'],
  ['Edit', '{"file_path": "missing.py", "old_string": "a", "new_string": "x"}'],
  ['Edit', '{"file_path": "a.py", "old_string": "print(1)"}'],
  ['Edit', '{"file_path": "crlf.txt", "old_string": "one\\ntwo", "new_string": "1\\n2"}'],
  ['Edit', '{"file_path": "crlf.txt", "old_string": "one\\r\\ntwo", "new_string": "x"}'],
  ['Edit', '{"file_path": "dollar.txt", "old_string": "$&", "new_string": "$\'$`"}'],
  ['Edit', '{"file_path": "emoji.txt", "old_string": "😀", "new_string": "e", "replace_all": 1}'],
  ['Edit', '{"file_path": "bad.bin", "old_string": "a", "new_string": "A"}'],
  ['Edit', '{"file_path": "src/m.py", "old_string": 2, "new_string": 3}'],
  ['Edit', '{"file_path": "src/m.py", "old_string": "f", "new_string": "g", "replace_all": 1.0}'],
  ['Read', '{"file_path": "crlf.txt"}'],
  ['Read', '{"file_path": "bad.bin"}'],
  ['Glob', '{"pattern": "**/*.py"}'],
  ['Glob', '{"pattern": "*"}'],
  ['Glob', '{"pattern": ".*"}'],
  ['Glob', '{"pattern": "**"}'],
  ['Glob', '{"pattern": "many/*"}'],
  ['Glob', '{"pattern": "*.py", "path": "src"}'],
  ['Glob', '{"pattern": "*.py", "path": "ln"}'],
  ['Glob', '{"pattern": "/etc/host*"}'],
  ['Glob', '{"pattern": "*", "path": "/etc/"}'],
  ['Glob', '{"pattern": "../*"}'],
  ['Glob', '{"pattern": "nothing*"}'],
  ['Glob', '{}'],
  ['Glob', '{"pattern": ""}'],
  ['Glob', '{"pattern": "src/"}'],
  ['Glob', '{"pattern": "a.py"}'],
  ['Glob', '{"pattern": "./src/./*.py"}'],
  ['Glob', '{"pattern": "**/", "path": "."}'],
  ['Glob', '{"pattern": "*", "path": "~"}'],
  ['Bash', '{"command": "echo hi; echo err >&2; exit 3"}'],
  ['Bash', '{"command": "printf \'a\\\\r\\\\nb\\\\rc\'"}'],
  ['Bash', '{"command": "kill -9 $$"}'],
  ['Bash', '{"command": "kill -TERM $$"}'],
  ['Bash', '{"command": "pwd; echo $HOME | wc -c"}'],
  ['Bash', '{"command": "cat"}'],
  ['Bash', '{"command": "head -c 40000 /dev/zero | tr \'\\\\0\' x"}'],
  ['Bash', '{"command": "head -c 40000 /dev/zero | tr \'\\\\0\' x >&2"}'],
  ['Bash', '{"command": "for i in $(seq 1 5000); do echo \\"é line $i\\"; done"}'],
  ['Bash', '{"command": "printf \'a\\\\r\\\\n\'; sleep 5", "timeout": 0.3}'],
  ['Bash', '{"command": "sleep 5", "timeout": 250}'],
  ['Bash', '{"command": "sleep 5", "timeout_ms": 250}'],
  ['Bash', '{"command": "sleep 5", "timeout_ms": "abc"}'],
  ['Bash', '{"command": "sleep 5", "timeout": "abc"}'],
  ['Bash', '{"command": "sleep 5", "timeout": [1]}'],
  ['Bash', '{"command": "sleep 5", "timeout": 0.25}'],
  ['Bash', '{"command": "sleep 5", "timeout": 0}'],
  ['Bash', '{"command": "echo x", "timeout": null, "timeout_ms": null}'],
  ['Bash', '{"command": "sleep 5", "timeout": "NaN"}'],
  ['Bash', '{"command": ""}'],
  ['Bash', '{"command": 12}'],
  ['Bash', '{}'],
  ['Nope', '{}'],
  ['Bash', '{"command": "sleep 2 & echo started", "timeout": 0.5}'],
  ['Bash', '{"command": "sleep 2 >/dev/null 2>&1 & echo detached"}'],
  ['Read', '{"file_path": "big.txt", "offset": false, "limit": "  3 "}'],
  ['Read', '{"file_path": "big.txt", "offset": "\u0663", "limit": "1_0"}'],
  ['Glob', '{"pattern": 5}'],
  ['Glob', '{"pattern": "*", "path": "missing"}'],
  ['Glob', '{"pattern": "loop*"}'],
  ['Read', '{"file_path": "loop1"}'],
  ['Write', '{"file_path": "loop1", "content": "x"}'],
  [
    'Edit',
    '{"file_path": "a.py", "old_string": "print", "new_string": "p", "replace_all": " TRUE "}',
  ],
  ['Write', '{"file_path": "~/h.txt", "content": "home"}'],
  ['Read', '{"file_path": "~/h.txt"}'],
  ['Glob', '{"pattern": "*.txt", "path": "~"}'],
  ['Write', '{"file_path": "/", "content": "x"}'],
  ['Read', '{"file_path": "/proc/self/nonexistent/x"}'],
  ['Bash', '{"command": "exit 300"}'],
  ['Bash', '{"command": "echo $LANG $TERM; cd /tmp; echo moved"}'],
  ['Bash', '{"command": "pwd"}'],
  ['Write', '{"file_path": "empty.txt", "content": ""}'],
  ['Read', '{"file_path": "empty.txt"}'],
  ['Write', '{"file_path": "nl.txt", "content": "\\n"}'],
  ['Write', '{"file_path": "nl2.txt", "content": "\n"}'],
  ['Read', '{"file_path": "nl2.txt"}'],
  ['Write', '{"file_path": "newdir/", "content": "x"}'],
  ['Read', '{"file_path": "newdir"}'],
  ['Write', '{"file_path": "cr.txt", "content": "a\r\nb\rc"}'],
  ['Bash', '{"command": "od -c cr.txt | head -2"}'],
  ['Edit', '{"file_path": "cr.txt", "old_string": "a\r", "new_string": "z"}'],
  ['Edit', '{"file_path": "cr.txt", "old_string": "a\nb", "new_string": "z"}'],
  ['Write', '{"file_path": "ov.txt", "content": "aaaaa"}'],
  ['Edit', '{"file_path": "ov.txt", "old_string": "aa", "new_string": "b", "replace_all": true}'],
  ['Read', '{"file_path": "ov.txt"}'],
  ['Read', '{"file_path": "big.txt", "offset": "+3", "limit": "\u0663"}'],
  ['Read', '{"file_path": "big.txt", "offset": " 3", "limit": "3 "}'],
  ['Read', '{"file_path": "big.txt", "offset": {}, "limit": 1}'],
  ['Read', '{"file_path": "big.txt", "offset": {"a": 1}, "limit": 1}'],
  ['Read', '{"file_path": "a.py "}'],
  ['Read', '{"file_path": "~"}'],
  ['Read', '{"file_path": "~/"}'],
  ['Read', '{"file_path": true}'],
  ['Read', '{"file_path": 1.5}'],
  ['Read', '{"file_path": "/dev/null"}'],
  ['Read', '{"file_path": "//etc//hostname"}'],
  ['Read', '{"file_path": "///etc/hostname"}'],
  ['Bash', '{"command": "printf \\"a\\\\0b\\""}'],
  ['Bash', '{"command": "exec 1>&-; echo closed >&2"}'],
  ['Bash', '{"command": "echo x", "description": "only"}'],
  ['Glob', '{"pattern": "**/*", "path": "/nonexistent"}'],
  ['Glob', '{"pattern": "~/x"}'],
  ['Glob', '{"pattern": "src/../*.py"}'],
  ['Glob', '{"pattern": "*", "path": "a.py"}'],
  ['Glob', '{"pattern": "**/m.py", "path": "ln"}'],
  ['Glob', '{"pattern": "[[]*"}'],
  ['Glob', '{"pattern": "[a-"}'],
  ['Glob', '{"pattern": "*.[pt][yx]*"}'],
  ['Glob', '{"pattern": ["a.py"]}'],
  ['Glob', '{"pattern": "a.py", "path": ""}'],
  ['Glob', '{"pattern": "a.py", "path": 0}'],
  ['Glob', '{"pattern": "**/**", "path": "src"}'],
  ['Glob', '{"pattern": "**/.h*"}'],
  ['Glob', '{"pattern": "src/.*"}'],
  ['Glob', '{"pattern": "s*/**/d*.py"}'],
  ['Glob', '{"pattern": "*", "path": "x[1]"}'],
  ['Glob', '{"pattern": "x[[]1]/*"}'],
  ['Glob', '{"pattern": "uni/*"}'],
  ['Glob', '{"pattern": "loopdir/**/*.py"}'],
  ['Read', '{"file_path": "uni/new\nline.py"}'],
  ['Read', '{"file_path": "loopdir/again/again/f.py"}'],
  ['Read', '{"file_path": "x[1]/in.txt"}'],
  ['Bash', '{"command": "echo big", "timeout": 2147483000}'],
  ['Bash', '{"command": "echo big", "timeout": 2147484000}'],
  ['Bash', '{"command": "echo big", "timeout": 1e13}'],
  ['Bash', '{"command": "echo big", "timeout": 1e300}'],
  ['Bash', '{"command": "echo big", "timeout": "inf"}'],
  ['Bash', '{"command": "echo big", "timeout_ms": "-inf"}'],
  ['Bash', '{"command": "echo big", "timeout": 1e-300}'],
  ['Write', '{"file_path": "r1.txt", "content": 1e16}'],
  ['Write', '{"file_path": "r2.txt", "content": [1.5e-5, -0.0, 0.1, 123456789.125, 1e22, -1E-7]}'],
  [
    'Write',
    '{"file_path": "r3.txt", "content": {"q": "x\'y\\"z", "c": "\\u0007\\u007f\\u00a0\\u00ad\\u200b\\u2028 \\t", "e": "é😀\\ue000\\udb80\\udc00", "n": [true, false, null, {}], "k": "\\\\"}}',
  ],
  ['Write', '{"file_path": "r4.txt", "content": "x\'"}'],
  ['Write', '{"file_path": "src/../w.txt", "content": "w"}'],
  ['Read', '{"file_path": "r3.txt"}'],
  ['Read', '{"file_path": "a.py/"}'],
  ['Read', '{"file_path": "../testbed/a.py"}'],
  ['Read', '{"file_path": "/testbed/../etc/hostname"}'],
  ['Read', '{"file_path": "x", "file_path": "a.py"}'],
  ['Read', '{"file_path": "a.py"} trailing'],
  ['Read', '"{\\"file_path\\": \\"a.py\\"}"'],
  ['Read', ' {"file_path": "a.py", "offset": 2, "limit": 0}\n'],
  ['Read', '{"file_path": "a.py", "offset": true, "limit": 1.9}'],
  ['Read', '{"file_path": "a.py", "offset": "1.0"}'],
  ['Read', '{"file_path": "a.py", "limit": "\uff11"}'],
  ['read', '{"file_path": "a.py"}'],
  ['', '{}'],
  ['Edit', '{"file_path": "a.py", "old_string": "x", "new_string": null, "replace_all": " On\\n"}'],
  ['Edit', '{"path": "src/m.py", "old_string": "return", "new_string": ["r"]}'],
  ['Edit', '{"file_path": "emoji.txt", "old_string": "\\ud83d", "new_string": "x"}'],
  ['Glob', '{"pattern": "src/**"}'],
  ['Glob', '{"pattern": "**/*.txt", "path": "uni/.."}'],
  ['Glob', '{"pattern": "*", "path": "../testbed/src"}'],
  ['Glob', '{"pattern": "many/f1?.txt"}'],
  ['Glob', '{"pattern": "many/f[!1]*.txt"}'],
  ['Glob', '{"pattern": "*.py", "path": "/testbed/../testbed"}'],
  ['Bash', '{"command": "echo x", "timeout": true}'],
  ['Bash', '{"command": "echo x", "timeout": "1e3"}'],
  ['Bash', '{"command": "echo x", "timeout": 1000}'],
  ['Bash', '{"command": "echo x", "timeout": 1000.5}'],
  ['Bash', '{"command": "sleep 3", "timeout": 1000.5, "timeout_ms": 150}'],
  ['Bash', '{"command": "printf \'%s\' \\"$(head -c 29970 /dev/zero | tr \'\\\\0\' y)\\""}'],
  ['Bash', '{"command": "printf \'\\\\r\\\\r\\\\n\\\\n\'; printf \'e\\\\r\' >&2"}'],
  ['Bash', '{"command": "echo -n; kill -SEGV $$"}'],
  ['Bash', '{"command": "printf \'\\\\x0b\\\\x0c\\\\xc2\\\\x85\\\\xe2\\\\x80\\\\xa8\'"}'],
  ['Glob', '{"pattern": "**.py"}'],
  ['Glob', '{"pattern": "***/*.py"}'],
  ['Glob', '{"pattern": "**/**/*.py"}'],
  ['Glob', '{"pattern": "src/**/"}'],
  ['Glob', '{"pattern": ".*/**"}'],
  ['Glob', '{"pattern": "**/.*"}'],
  ['Glob', '{"pattern": "[]]*"}'],
  ['Glob', '{"pattern": "*["}'],
  ['Glob', '{"pattern": "[!a-m]*.txt"}'],
  ['Glob', '{"pattern": "[^a-m]*.txt"}'],
  ['Glob', '{"pattern": "\\\\*"}'],
  ['Glob', '{"pattern": "a.p[x-z]"}'],
  ['Glob', '{"pattern": "A.PY"}'],
  ['Glob', '{"pattern": "uni/?.py"}'],
  ['Glob', '{"pattern": "many/f100?.txt"}'],
  ['Glob', '{"pattern": "ln/**"}'],
  ['Glob', '{"pattern": "**/in.txt"}'],
  ['Glob', '{"pattern": "*/", "path": "src"}'],
  ['Glob', '{"pattern": "**/*.py", "path": "/testbed/src"}'],
  ['Glob', '{"pattern": "m.py", "path": "src/"}'],
  ['Glob', '{"pattern": "..", "path": "src"}'],
  ['Glob', '{"pattern": "../a.py", "path": "src"}'],
  ['Glob', '{"pattern": "outside"}'],
  ['Glob', '{"pattern": "loop1"}'],
  ['Glob', '{"pattern": "**/f.py", "path": "loopdir"}'],
  // Python encodes paths and argv with surrogateescape (os.fsencode).
  ['Write', '{"file_path": "s\\ud800.txt", "content": "s"}'],
  ['Write', '{"file_path": "sub\\udbff/x", "content": "s"}'],
  ['Write', '{"file_path": "\\udcff.txt", "content": "s"}'],
  ['Read', '{"file_path": "\\udcff.txt"}'],
  ['Read', '{"file_path": "a\\udcff\\udc00b"}'],
  ['Bash', '{"command": "LC_ALL=C ls | od -c | tail -3"}'],
  ['Bash', '{"command": "echo \\ud800\\u0000"}'],
];

/** Local globbing decodes names as UTF-8, so only Python lists a raw-byte name as it is. */
const dockerOnlyCalls: Array<[string, string | null]> = [
  ['Glob', '{"pattern": "*.txt"}'],
  ['Write', '{"file_path": "uni/\\udcff.py", "content": "b"}'],
  ['Glob', '{"pattern": "uni/*"}'],
];

const REFERENCE = [
  'import json, os, runpy, sys',
  'req = json.loads(sys.stdin.read())',
  'run_tool = runpy.run_path(req["runner"])["run_tool"]',
  'os.chdir(req["workdir"])',
  // agent.py's _parse_arguments
  'def parse(raw):',
  '    if not raw: return {}',
  '    try: value = json.loads(raw)',
  '    except (json.JSONDecodeError, TypeError): return {}',
  '    return value if isinstance(value, dict) else {}',
  'sys.stdout.write(json.dumps([run_tool(name, parse(raw)) for name, raw in req["calls"]]))',
].join('\n');

/** Names as raw bytes: a write through a surrogate-escaped path makes a non-UTF-8 name. */
function snapshot(dir: string): string[] {
  const out: string[] = [];
  const walk = (current: Buffer): void => {
    const names = readdirSync(current, { encoding: 'buffer' }).sort(Buffer.compare);
    for (const name of names) {
      const entry = Buffer.concat([current, Buffer.from('/'), name]);
      const label = entry.toString('hex');
      const info = lstatSync(entry);
      if (info.isSymbolicLink()) out.push(`${label} -> ${readlinkSync(entry)}`);
      else if (info.isDirectory()) {
        out.push(`${label}/`);
        walk(entry);
      } else out.push(`${label} ${readFileSync(entry).toString('hex')}`);
    }
  };
  walk(Buffer.from(dir));
  return out;
}

function makeSource(): string {
  const src = mkdtempSync(path.join(tmpdir(), 'frognano-reference-src-'));
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(src, file)), { recursive: true });
    writeFileSync(path.join(src, file), content);
  }
  symlinkSync('src', path.join(src, 'ln'));
  symlinkSync('.', path.join(src, 'loopdir', 'again'));
  symlinkSync('loop2', path.join(src, 'loop1'));
  symlinkSync('loop1', path.join(src, 'loop2'));
  symlinkSync('/etc/hostname', path.join(src, 'outside'));
  for (let i = 0; i < 1005; i++) {
    mkdirSync(path.join(src, 'many'), { recursive: true });
    writeFileSync(path.join(src, 'many', `f${i}.txt`), '');
  }
  return src;
}

describe.skipIf(!runner)('executeTool against Leaf tool_runner.py', () => {
  let src: string;
  let sb: LocalSandbox;

  beforeAll(async () => {
    src = makeSource();
    sb = await createLocalSandbox({ sourceDir: src });
  });

  afterAll(async () => {
    await sb?.dispose();
    if (src) rmSync(src, { recursive: true, force: true });
  });

  const restore = (): void => {
    rmSync(path.join(sb.workdir, '..', 'escape-leafdiff.txt'), { force: true });
    rmSync(path.join(sb.homeDir, 'h.txt'), { force: true });
    execFileSync('bash', [
      '-c',
      'find "$1" -mindepth 1 -delete && cp -a "$2"/. "$1"/',
      '_',
      sb.workdir,
      src,
    ]);
  };

  it('gives byte-identical observations and leaves an identical tree', async () => {
    expect(existsSync(runner as string)).toBe(true);
    restore();
    const reference = JSON.parse(
      execFileSync('python3', ['-c', REFERENCE], {
        input: JSON.stringify({ runner, workdir: sb.workdir, calls }),
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: sb.homeDir,
          LANG: 'C.UTF-8',
          TERM: 'dumb',
        },
        maxBuffer: 1e8,
      }).toString(),
    ) as string[];
    const referenceTree = snapshot(sb.workdir);
    restore();
    for (const [index, [name, raw]] of calls.entries()) {
      const observation = await executeTool(sb, name, raw);
      expect({ name, raw, observation }).toEqual({ name, raw, observation: reference[index] });
    }
    expect(snapshot(sb.workdir)).toEqual(referenceTree);
  }, 120_000);
});

// The same comparison inside the hardened container: the reference runs under the image's own
// python3 as the sandbox user, executeTool goes through DockerSandbox's tool helper.
describe.skipIf(!runner || !dockerReady)(
  'executeTool on DockerSandbox against Leaf tool_runner.py',
  () => {
    const dockerCalls = [...calls, ...dockerOnlyCalls];
    const pristine = '/tmp/leafdiff-src';
    const runnerCopy = '/tmp/leafdiff-runner.py';
    let src: string;
    let sb: Sandbox;

    beforeAll(async () => {
      src = makeSource();
      sb = await dockerSandboxFactory.create(src);
      const copy = await sb.exec(`mkdir -p ${pristine} && cp -a ${sb.workdir}/. ${pristine}/`);
      expect(copy.exitCode, copy.stderr.toString()).toBe(0);
      await sb.writeFile(runnerCopy, readFileSync(runner as string));
    }, 120_000);

    afterAll(async () => {
      await sb?.dispose();
      if (src) rmSync(src, { recursive: true, force: true });
    });

    const run = async (command: string, stdin?: string): Promise<string> => {
      const result = await sb.exec(command, {
        timeoutMs: 120_000,
        maxOutputBytes: 32 * 1024 * 1024,
        ...(stdin === undefined ? {} : { stdin }),
      });
      expect(result.stderr.toString(), command).toBe('');
      expect(result.exitCode, command).toBe(0);
      return result.stdout.toString('utf8');
    };

    const restore = (): Promise<string> =>
      run(
        `rm -f ~/h.txt && find ${sb.workdir} -mindepth 1 -delete && cp -a ${pristine}/. ${sb.workdir}/`,
      );

    // Paths, link targets and content hashes of the tree, sorted.
    const snapshotTree = (): Promise<string> =>
      run(
        `cd ${sb.workdir} && find . -mindepth 1 \\( -type l -printf '%p -> %l\\n' \\) -o \\( -type d -printf '%p/\\n' \\) -o \\( -type f -exec sha256sum {} + \\) | LC_ALL=C sort`,
      );

    it('gives byte-identical observations and leaves an identical tree', async () => {
      await restore();
      const reference = JSON.parse(
        await run(
          `python3 -c ${shellQuote(REFERENCE)}`,
          JSON.stringify({ runner: runnerCopy, workdir: sb.workdir, calls: dockerCalls }),
        ),
      ) as string[];
      const referenceTree = await snapshotTree();
      await restore();
      for (const [index, [name, raw]] of dockerCalls.entries()) {
        const observation = await executeTool(sb, name, raw);
        expect({ name, raw, observation }).toEqual({ name, raw, observation: reference[index] });
      }
      expect(await snapshotTree()).toEqual(referenceTree);
    }, 180_000);
  },
);

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
