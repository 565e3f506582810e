// Tool conformance suite (leaf-protocol.md §3–4): every observation and error string,
// byte for byte, for every sandbox in test/support/sandbox-factories.ts. The expected
// strings were checked against Leaf's own Python tool runner on the same inputs.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/leaf/sandbox.js';
import { SandboxFailure } from '../../src/leaf/sandbox.js';
import {
  bashTimeoutSeconds,
  compareCodePoints,
  executeTool,
  parseToolArguments,
} from '../../src/leaf/tools.js';
import { type SandboxFactory, sandboxFactories } from '../support/sandbox-factories.js';

const SOURCE_FILES: Record<string, string | Buffer> = {
  'a.py': 'print(1)\nx = 1\nx = 1\n',
  'lines.txt':
    'one\r\ntwo\rthree\nfour\x0bfive\x0csix\x1cseven\x1deight\x1enine\x85ten\u2028eleven\u2029twelve\x1fsame\n',
  'bad.bin': Buffer.from([0x61, 0xff, 0x0a, 0xed, 0xa0, 0x80, 0x0a, 0xef, 0xbb, 0xbf, 0x62]),
  'src/m.py': 'def f():\n    return 2\n',
  'src/.h.py': 'hidden',
  'src/sub/deep.py': 'deep',
  '.hidden.py': 'x',
  '.hdir/x.py': 'x',
  'big.txt': Array.from({ length: 3000 }, (_, i) => `line ${i}`).join('\n'),
  'emoji.txt': '😀😀 x 😀\n',
  'dollar.txt': 'a $& b $1 c',
  'crlf.txt': 'one\r\ntwo\r\n',
  'multi.txt': 'k k k\n',
  'edit-me.txt': 'alpha beta\n',
  'notes.md': 'no python here',
};

let source: string;

beforeAll(() => {
  source = mkdtempSync(path.join(tmpdir(), 'frognano-tools-src-'));
  for (const [file, content] of Object.entries(SOURCE_FILES)) {
    mkdirSync(path.dirname(path.join(source, file)), { recursive: true });
    writeFileSync(path.join(source, file), content);
  }
  for (let i = 0; i < 1005; i++) {
    mkdirSync(path.join(source, 'many'), { recursive: true });
    writeFileSync(path.join(source, 'many', `f${String(i).padStart(4, '0')}.txt`), '');
  }
  symlinkSync('src', path.join(source, 'ln'));
  symlinkSync('a.py', path.join(source, 'flink.py'));
  symlinkSync('nowhere', path.join(source, 'broken.py'));
});

afterAll(() => {
  rmSync(source, { recursive: true, force: true });
});

describe('compareCodePoints', () => {
  it('orders as Python sorts str: by code point, lone surrogates (escaped bytes) included', () => {
    // sorted(['\ue000x', '\udcff', '\U0001F600', 'a', '\udcffa', '\ud800', 'ab']) in Python
    const names = ['\ue000x', '\udcff', '😀', 'a', '\udcffa', '\ud800', 'ab'];
    expect([...names].sort(compareCodePoints)).toEqual([
      'a',
      'ab',
      '\ud800',
      '\udcff',
      '\udcffa',
      '\ue000x',
      '😀',
    ]);
  });
});

describe('parseToolArguments', () => {
  it('parses like json.loads and turns anything but an object into {}', () => {
    expect([...parseToolArguments('{"a": 1, "b": 1.0}')]).toEqual([
      ['a', 1n],
      ['b', 1],
    ]);
    for (const raw of [null, undefined, '', 'not json', '[1]', '"s"', '3', '{"a":', '{"a": 1} x']) {
      expect(parseToolArguments(raw).size).toBe(0);
    }
  });

  it('reads Bash timeouts in seconds, milliseconds above 1000, or timeout_ms', () => {
    const seconds = (raw: string) => bashTimeoutSeconds(parseToolArguments(raw));
    expect(seconds('{}')).toBe(120);
    expect(seconds('{"timeout": 5}')).toBe(5);
    expect(seconds('{"timeout": "7.5"}')).toBe(7.5);
    expect(seconds('{"timeout": 1000}')).toBe(1000);
    expect(seconds('{"timeout": 1500}')).toBe(1.5);
    expect(seconds('{"timeout": 0}')).toBe(0.1);
    expect(seconds('{"timeout": -3}')).toBe(0.1);
    expect(seconds('{"timeout": true}')).toBe(1);
    expect(seconds('{"timeout": "nan"}')).toBe(0.1);
    expect(seconds('{"timeout_ms": 2500, "timeout": 9}')).toBe(2.5);
    expect(seconds('{"timeout_ms": 20}')).toBe(0.1);
    expect(seconds('{"timeout_ms": null, "timeout": 9}')).toBe(9);
    expect(seconds('{"timeout": null}')).toBe(120);
  });
});

describe.each(sandboxFactories)('tools on the $name sandbox', (factory: SandboxFactory) => {
  let sb: Sandbox;
  let w: string;
  let skipReason: string | undefined;

  beforeAll(async () => {
    skipReason = await factory.unavailable?.();
    if (skipReason) {
      console.warn(`SKIPPING the ${factory.name} tool conformance suite: ${skipReason}`);
      return;
    }
    sb = await factory.create(source);
    w = sb.workdir;
  });

  afterAll(async () => {
    await sb?.dispose();
  });

  const run = (name: string, args: unknown): Promise<string> =>
    executeTool(
      sb,
      name,
      typeof args === 'string' || args === null ? (args as string | null) : JSON.stringify(args),
    );

  describe('arguments and dispatch', () => {
    it('reports unknown tools and malformed arguments as the tools themselves do', async ({
      skip,
    }) => {
      if (skipReason) skip();
      expect(await run('Frobnicate', {})).toBe('Unknown tool: Frobnicate');
      expect(await run('read', { file_path: 'a.py' })).toBe('Unknown tool: read');
      for (const raw of ['not json', '[1, 2]', null, '', '"a.py"']) {
        expect(await run('Read', raw)).toBe('ValueError: file_path is required');
        expect(await run('Write', raw)).toBe('ValueError: file_path is required');
        expect(await run('Edit', raw)).toBe('ValueError: file_path is required');
        expect(await run('Glob', raw)).toBe('ValueError: pattern is required');
        expect(await run('Bash', raw)).toBe('ValueError: command is required');
      }
      expect(await run('Glob', { pattern: '' })).toBe('ValueError: pattern is required');
      expect(await run('Bash', { command: '' })).toBe('ValueError: command is required');
      expect(await run('Bash', { command: 0 })).toBe('ValueError: command is required');
    });
  });

  describe('Read', () => {
    it('returns the display path and numbered lines', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Read', { file_path: 'a.py' })).toBe(
        'a.py\n1. print(1)\n2. x = 1\n3. x = 1',
      );
      expect(await run('Read', { file_path: `${w}/src/m.py` })).toBe(
        'src/m.py\n1. def f():\n2.     return 2',
      );
    });

    it('falls back to `path` when file_path is missing or falsy', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Read', { path: 'a.py', limit: 1 })).toBe('a.py\n1. print(1)');
      expect(await run('Read', { file_path: '', path: 'a.py', limit: 1 })).toBe(
        'a.py\n1. print(1)',
      );
      expect(await run('Read', { file_path: 0, path: 'a.py', limit: 1 })).toBe('a.py\n1. print(1)');
    });

    it('splits lines like str.splitlines() after universal-newline decoding', async ({ skip }) => {
      if (skipReason) skip();
      const expected = [
        'lines.txt',
        '1. one',
        '2. two',
        '3. three',
        '4. four',
        '5. five',
        '6. six',
        '7. seven',
        '8. eight',
        '9. nine',
        '10. ten',
        '11. eleven',
        '12. twelve\x1fsame',
      ].join('\n');
      expect(await run('Read', { file_path: 'lines.txt' })).toBe(expected);
    });

    it('replaces invalid UTF-8 with U+FFFD and keeps a BOM', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Read', { file_path: 'bad.bin' })).toBe(
        'bad.bin\n1. a\ufffd\n2. \ufffd\ufffd\ufffd\n3. \ufeffb',
      );
    });

    it('applies offset and limit with int() semantics', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Read', { file_path: 'big.txt', offset: 10, limit: 2 })).toBe(
        'big.txt\n10. line 9\n11. line 10',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: '10', limit: ' 2 ' })).toBe(
        'big.txt\n10. line 9\n11. line 10',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: 2.7, limit: true })).toBe(
        'big.txt\n2. line 1',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: -5, limit: 1 })).toBe(
        'big.txt\n1. line 0',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: false, limit: 1 })).toBe(
        'big.txt\n1. line 0',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: '', limit: 1 })).toBe(
        'big.txt\n1. line 0',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: null, limit: 1 })).toBe(
        'big.txt\n1. line 0',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: 2999 })).toBe(
        'big.txt\n2999. line 2998\n3000. line 2999',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: 2999, limit: -1 })).toBe(
        'big.txt\n2999. line 2998\n3000. line 2999',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: 2999, limit: 0 })).toBe(
        'big.txt\n2999. line 2998\n3000. line 2999',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: 99999, limit: 5 })).toBe(
        'big.txt\n',
      );
      expect(await run('Read', { file_path: 'big.txt', offset: 'abc' })).toBe(
        "ValueError: invalid literal for int() with base 10: 'abc'",
      );
      expect(await run('Read', { file_path: 'big.txt', limit: '2.5' })).toBe(
        "ValueError: invalid literal for int() with base 10: '2.5'",
      );
      expect(await run('Read', { file_path: 'big.txt', limit: [1] })).toBe(
        "TypeError: int() argument must be a string, a bytes-like object or a real number, not 'list'",
      );
      expect(await run('Read', '{"file_path": "big.txt", "offset": NaN}')).toBe(
        'ValueError: cannot convert float NaN to integer',
      );
      expect(await run('Read', '{"file_path": "big.txt", "offset": 1e400}')).toBe(
        'OverflowError: cannot convert float infinity to integer',
      );
      // The file is read before the arguments are converted.
      expect(await run('Read', { file_path: 'missing.py', offset: 'abc' })).toBe(
        `FileNotFoundError: [Errno 2] No such file or directory: '${w}/missing.py'`,
      );
    });

    it('truncates to 20000 code points with the dropped count', async ({ skip }) => {
      if (skipReason) skip();
      const full = `big.txt\n${Array.from({ length: 3000 }, (_, i) => `${i + 1}. line ${i}`).join('\n')}`;
      expect(await run('Read', { file_path: 'big.txt' })).toBe(
        `${full.slice(0, 20000)}\n[truncated ${full.length - 20000} chars]`,
      );
      await run('Write', { file_path: 'wide.txt', content: '😀'.repeat(30000) });
      const wide = Array.from(`wide.txt\n1. ${'😀'.repeat(30000)}`);
      expect(await run('Read', { file_path: 'wide.txt' })).toBe(
        `${wide.slice(0, 20000).join('')}\n[truncated ${wide.length - 20000} chars]`,
      );
    });

    it('streams a long file next to it: exact counts, deep offsets, an endless device', async ({
      skip,
    }) => {
      if (skipReason) skip();
      await run('Bash', { command: 'seq 1 200000 > long.txt' });
      const lines = Array.from({ length: 200_000 }, (_, i) => `${i + 1}. ${i + 1}`);
      const full = `long.txt\n${lines.join('\n')}`;
      expect(await run('Read', { file_path: 'long.txt' })).toBe(
        `${full.slice(0, 20000)}\n[truncated ${full.length - 20000} chars]`,
      );
      expect(await run('Read', { file_path: 'long.txt', offset: 199_999, limit: 5 })).toBe(
        'long.txt\n199999. 199999\n200000. 200000',
      );
      const tail = `long.txt\n${lines.slice(149_999).join('\n')}`;
      expect(await run('Read', { file_path: 'long.txt', offset: 150_000 })).toBe(
        `${tail.slice(0, 20000)}\n[truncated ${tail.length - 20000} chars]`,
      );
      expect(await run('Read', { file_path: '/dev/zero' })).toBe('MemoryError: ');
    });

    it('reports OS errors with the joined path, in Python words', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Read', { file_path: 'missing.py' })).toBe(
        `FileNotFoundError: [Errno 2] No such file or directory: '${w}/missing.py'`,
      );
      expect(await run('Read', { file_path: 'src' })).toBe(
        `IsADirectoryError: [Errno 21] Is a directory: '${w}/src'`,
      );
      expect(await run('Read', { file_path: '.' })).toBe(
        `IsADirectoryError: [Errno 21] Is a directory: '${w}'`,
      );
      expect(await run('Read', { file_path: './src//sub/../x.py' })).toBe(
        `FileNotFoundError: [Errno 2] No such file or directory: '${w}/src/sub/../x.py'`,
      );
      expect(await run('Read', { file_path: 'a.py/x' })).toBe(
        `NotADirectoryError: [Errno 20] Not a directory: '${w}/a.py/x'`,
      );
      expect(await run('Read', { file_path: "it's.txt" })).toBe(
        `FileNotFoundError: [Errno 2] No such file or directory: "${w}/it's.txt"`,
      );
      expect(await run('Read', { file_path: 'a\u0000b' })).toBe('ValueError: embedded null byte');
      expect(await run('Read', { file_path: ['a.py'] })).toBe(
        `FileNotFoundError: [Errno 2] No such file or directory: "${w}/['a.py']"`,
      );
      expect(await run('Read', { file_path: '~nosuchuser-frognano/x' })).toBe(
        'RuntimeError: Could not determine home directory.',
      );
    });

    it('displays resolved paths relative to the root, others as joined', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Read', { file_path: 'src/../a.py', limit: 1 })).toBe('a.py\n1. print(1)');
      expect(await run('Read', { file_path: 'ln/m.py', limit: 1 })).toBe('src/m.py\n1. def f():');
      expect(await run('Read', { file_path: 'flink.py', limit: 1 })).toBe('a.py\n1. print(1)');
      expect(await run('Write', { file_path: '~/outside.txt', content: 'out' })).toBe(
        `Wrote ${sb.homeDir}/outside.txt (3 bytes).`,
      );
      expect(await run('Read', { file_path: '~/outside.txt' })).toBe(
        `${sb.homeDir}/outside.txt\n1. out`,
      );
      await run('Bash', { command: 'ln -s ~/outside.txt link-out' });
      expect(await run('Read', { file_path: 'link-out' })).toBe(`${w}/link-out\n1. out`);
    });
  });

  describe('Write', () => {
    it('creates parents, writes UTF-8 and counts code points as "bytes"', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Write', { file_path: 'new/dir/f.txt', content: 'héllo 😀\n' })).toBe(
        'Wrote new/dir/f.txt (8 bytes).',
      );
      expect((await sb.readFile(`${w}/new/dir/f.txt`)).data).toEqual(
        Buffer.from('héllo 😀\n', 'utf8'),
      );
      expect(await run('Write', { file_path: 'new/dir/f.txt', content: 'short' })).toBe(
        'Wrote new/dir/f.txt (5 bytes).',
      );
      expect((await sb.readFile(`${w}/new/dir/f.txt`)).data.toString()).toBe('short');
    });

    it('writes str() of non-string content, and "" when it is missing', async ({ skip }) => {
      if (skipReason) skip();
      const cases: Array<[string, string]> = [
        ['{"file_path": "c1.txt", "content": null}', 'None'],
        ['{"file_path": "c2.txt", "content": 1.0}', '1.0'],
        ['{"file_path": "c3.txt", "content": 12345678901234567890123}', '12345678901234567890123'],
        [
          '{"file_path": "c4.txt", "content": [1, {"a": null}, "x\'y", true]}',
          `[1, {'a': None}, "x'y", True]`,
        ],
        ['{"file_path": "c5.txt"}', ''],
        ['{"file_path": "c6.txt", "content": 1e16}', '1e+16'],
      ];
      for (const [raw, content] of cases) {
        const file = (JSON.parse(raw) as { file_path: string }).file_path;
        expect(await run('Write', raw)).toBe(`Wrote ${file} (${content.length} bytes).`);
        expect((await sb.readFile(`${w}/${file}`)).data.toString()).toBe(content);
      }
    });

    it('reports pathlib mkdir and open errors', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Write', { file_path: 'a.py/x.txt', content: 'x' })).toBe(
        `FileExistsError: [Errno 17] File exists: '${w}/a.py'`,
      );
      expect(await run('Write', { file_path: 'a.py/sub/x.txt', content: 'x' })).toBe(
        `NotADirectoryError: [Errno 20] Not a directory: '${w}/a.py/sub'`,
      );
      expect(await run('Write', { file_path: 'src', content: 'x' })).toBe(
        `IsADirectoryError: [Errno 21] Is a directory: '${w}/src'`,
      );
      expect(await run('Write', { content: 'x' })).toBe('ValueError: file_path is required');
    });

    it('refuses lone surrogates as Python does, leaving the file alone', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Write', '{"file_path": "edit-me.txt", "content": "ab\\ud800c"}')).toBe(
        "UnicodeEncodeError: 'utf-8' codec can't encode character '\\ud800' in position 2: surrogates not allowed",
      );
      expect(await run('Write', '{"file_path": "s.txt", "content": "😀\\udc00\\udc01"}')).toBe(
        "UnicodeEncodeError: 'utf-8' codec can't encode characters in position 1-2: surrogates not allowed",
      );
      expect((await sb.readFile(`${w}/edit-me.txt`)).data.toString()).toBe('alpha beta\n');
    });

    it('encodes paths and commands as os.fsencode does (surrogateescape)', async ({ skip }) => {
      if (skipReason) skip();
      const pathError = (text: string, position: string): string =>
        `UnicodeEncodeError: 'utf-8' codec can't encode ${text} in position ${position}: surrogates not allowed`;
      const at = w.length + 1;
      expect(await run('Write', '{"file_path": "fs\\ud800.txt", "content": "x"}')).toBe(
        pathError("character '\\ud800'", String(at + 2)),
      );
      expect(await run('Read', '{"file_path": "fs\\udcff\\ud800\\udbff.txt"}')).toBe(
        pathError('characters', `${at + 3}-${at + 4}`),
      );
      expect(await run('Edit', '{"file_path": "\\udc00", "old_string": "a"}')).toBe(
        pathError("character '\\udc00'", String(at)),
      );
      // Parents are made before the file name fails to encode, as pathlib does.
      expect(await run('Write', '{"file_path": "fsdir/sub/\\ud800", "content": "x"}')).toBe(
        pathError("character '\\ud800'", String(at + 10)),
      );
      expect(await run('Bash', '{"command": "echo \\ud800\\u0000"}')).toBe(
        pathError("character '\\ud800'", '5'),
      );
      // U+DC80..U+DCFF stand for the undecodable bytes 0x80..0xFF.
      expect(await run('Write', '{"file_path": "fsdir/\\udcff.txt", "content": "raw"}')).toBe(
        'Wrote fsdir/\udcff.txt (3 bytes).',
      );
      expect(await run('Read', '{"file_path": "fsdir/\\udcff.txt"}')).toBe(
        'fsdir/\udcff.txt\n1. raw',
      );
      expect(await run('Bash', { command: 'LC_ALL=C ls fsdir | od -An -c' })).toBe(
        'Exit code: 0\nSTDOUT:\n   s   u   b  \\n 377   .   t   x   t  \\n\n\nSTDERR:\n',
      );
    });

    it('writes through symlinks and displays the target', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Write', { file_path: 'ln/w.py', content: 'w' })).toBe(
        'Wrote src/w.py (1 bytes).',
      );
    });
  });

  describe('Edit', () => {
    it('replaces one match, or all with a truthy replace_all', async ({ skip }) => {
      if (skipReason) skip();
      await run('Write', { file_path: 'e1.txt', content: 'x = 1\ny = 2\nx = 1\n' });
      expect(
        await run('Edit', { file_path: 'e1.txt', old_string: 'y = 2', new_string: 'y = 3' }),
      ).toBe('Edited e1.txt (1 replacement).');
      expect(
        await run('Edit', { file_path: 'e1.txt', old_string: 'x = 1', new_string: 'x = 9' }),
      ).toBe(
        'ValueError: old_string matched 2 times; set replace_all=true or use a more specific old_string',
      );
      for (const falsy of [false, 'no', 'off', 0, '', null, 'y', 2, [1]]) {
        expect(
          await run('Edit', {
            file_path: 'e1.txt',
            old_string: 'x = 1',
            new_string: 'x',
            replace_all: falsy,
          }),
        ).toBe(
          'ValueError: old_string matched 2 times; set replace_all=true or use a more specific old_string',
        );
      }
      // str(1.0) is "1.0", which is not one of the truthy words.
      expect(
        await run(
          'Edit',
          '{"file_path": "e1.txt", "old_string": "x = 1", "new_string": "x", "replace_all": 1.0}',
        ),
      ).toBe(
        'ValueError: old_string matched 2 times; set replace_all=true or use a more specific old_string',
      );
      expect(
        await run('Edit', {
          file_path: 'e1.txt',
          old_string: 'x = 1',
          new_string: 'x = 9',
          replace_all: ' YES ',
        }),
      ).toBe('Edited e1.txt (2 replacements).');
      expect((await sb.readFile(`${w}/e1.txt`)).data.toString()).toBe('x = 9\ny = 3\nx = 9\n');
      for (const truthy of [true, 'true', 'On', '1', 1]) {
        await run('Write', { file_path: 'e2.txt', content: 'a a' });
        expect(
          await run('Edit', {
            file_path: 'e2.txt',
            old_string: 'a',
            new_string: 'b',
            replace_all: truthy,
          }),
        ).toBe('Edited e2.txt (2 replacements).');
      }
      // replace_all with a single match still says 1 replacement.
      expect(
        await run('Edit', {
          file_path: 'e1.txt',
          old_string: 'y = 3',
          new_string: 'y',
          replace_all: true,
        }),
      ).toBe('Edited e1.txt (1 replacement).');
    });

    it('counts non-overlapping matches and code points', async ({ skip }) => {
      if (skipReason) skip();
      await run('Write', { file_path: 'e3.txt', content: 'aaaa 😀😀 x 😀' });
      expect(await run('Edit', { file_path: 'e3.txt', old_string: 'aa', new_string: 'b' })).toBe(
        'ValueError: old_string matched 2 times; set replace_all=true or use a more specific old_string',
      );
      expect(
        await run('Edit', {
          file_path: 'e3.txt',
          old_string: '😀',
          new_string: 'e',
          replace_all: 'yes',
        }),
      ).toBe('Edited e3.txt (3 replacements).');
      expect((await sb.readFile(`${w}/e3.txt`)).data.toString()).toBe('aaaa ee x e');
      expect(
        await run('Edit', '{"file_path": "emoji.txt", "old_string": "\\ud83d", "new_string": "x"}'),
      ).toBe('ValueError: old_string was not found');
    });

    it('reports its errors in order: arguments, file, matches', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Edit', { file_path: 'missing.py', old_string: '', new_string: 'x' })).toBe(
        'ValueError: old_string must be non-empty',
      );
      expect(await run('Edit', { file_path: 'missing.py', new_string: 'x' })).toBe(
        'ValueError: old_string must be non-empty',
      );
      expect(await run('Edit', { file_path: 'missing.py', old_string: 'a', new_string: 'x' })).toBe(
        `FileNotFoundError: [Errno 2] No such file or directory: '${w}/missing.py'`,
      );
      expect(await run('Edit', { file_path: 'notes.md', old_string: 'zzz', new_string: 'x' })).toBe(
        'ValueError: old_string was not found',
      );
      expect(await run('Edit', { old_string: 'a', new_string: 'b' })).toBe(
        'ValueError: file_path is required',
      );
    });

    it('treats a missing new_string as empty and replacement text literally', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Edit', { file_path: 'edit-me.txt', old_string: 'alpha ' })).toBe(
        'Edited edit-me.txt (1 replacement).',
      );
      expect((await sb.readFile(`${w}/edit-me.txt`)).data.toString()).toBe('beta\n');
      expect(
        await run('Edit', { file_path: 'dollar.txt', old_string: '$&', new_string: "$'$`" }),
      ).toBe('Edited dollar.txt (1 replacement).');
      expect((await sb.readFile(`${w}/dollar.txt`)).data.toString()).toBe("a $'$` b $1 c");
      expect(await run('Edit', { file_path: 'multi.txt', old_string: 'k', new_string: 2 })).toBe(
        'ValueError: old_string matched 3 times; set replace_all=true or use a more specific old_string',
      );
    });

    it('rewrites the file with universal newlines, as read_text/write_text do', async ({
      skip,
    }) => {
      if (skipReason) skip();
      expect(
        await run('Edit', { file_path: 'crlf.txt', old_string: 'one\r\ntwo', new_string: 'x' }),
      ).toBe('ValueError: old_string was not found');
      expect(
        await run('Edit', { file_path: 'crlf.txt', old_string: 'one\ntwo', new_string: '1\n2' }),
      ).toBe('Edited crlf.txt (1 replacement).');
      expect((await sb.readFile(`${w}/crlf.txt`)).data.toString()).toBe('1\n2\n');
    });
  });

  describe('Glob', () => {
    it('matches recursively, skips hidden entries, sorts the display paths', async ({ skip }) => {
      if (skipReason) skip();
      await run('Bash', {
        command:
          'mkdir -p gl && cd gl && touch b.py a.py .h.py && mkdir -p d/.x && touch d/c.py d/.x/y.py',
      });
      expect(await run('Glob', { pattern: '**/*.py', path: 'gl' })).toBe(
        'gl/a.py\ngl/b.py\ngl/d/c.py',
      );
      expect(await run('Glob', { pattern: '.*', path: 'gl' })).toBe('gl/.h.py');
      expect(await run('Glob', { pattern: '**/.*', path: 'gl' })).toBe('gl/.h.py');
      expect(await run('Glob', { pattern: '**', path: 'gl' })).toBe('gl/a.py\ngl/b.py\ngl/d/c.py');
      expect(await run('Glob', { pattern: 'd/.x/*', path: 'gl' })).toBe('gl/d/.x/y.py');
      expect(await run('Glob', { pattern: '[ab].py', path: 'gl' })).toBe('gl/a.py\ngl/b.py');
      expect(await run('Glob', { pattern: '[!a].py', path: 'gl' })).toBe('gl/b.py');
      expect(await run('Glob', { pattern: '?.py', path: `${w}/gl` })).toBe('gl/a.py\ngl/b.py');
      // pathlib drops the trailing slash before glob sees the pattern, so files match.
      expect(await run('Glob', { pattern: 'gl/*/' })).toBe('gl/a.py\ngl/b.py');
      expect(await run('Glob', { pattern: 'gl/d' })).toBe('No files matched.');
      expect(await run('Glob', { pattern: './gl/./d/*.py' })).toBe('gl/d/c.py');
    });

    it('shows symlinks by their resolved path, drops broken ones', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Glob', { pattern: '*.py' })).toBe('a.py\na.py');
      expect(await run('Glob', { pattern: '*.py', path: 'ln' })).toBe('src/m.py\nsrc/w.py');
      expect(await run('Glob', { pattern: 'src/**/*.py' })).toBe(
        'src/m.py\nsrc/sub/deep.py\nsrc/w.py',
      );
    });

    it('caps the list at 1000 with the count of the rest', async ({ skip }) => {
      if (skipReason) skip();
      const names = Array.from(
        { length: 1000 },
        (_, i) => `many/f${String(i).padStart(4, '0')}.txt`,
      );
      expect(await run('Glob', { pattern: 'many/*' })).toBe(
        `${names.join('\n')}\n... 5 more files`,
      );
      expect(await run('Glob', { pattern: 'many/f100[0-4].txt' })).toBe(
        'many/f1000.txt\nmany/f1001.txt\nmany/f1002.txt\nmany/f1003.txt\nmany/f1004.txt',
      );
    });

    it('handles no match, absolute patterns and roots outside the repository', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Glob', { pattern: 'nothing*' })).toBe('No files matched.');
      expect(await run('Glob', { pattern: '*', path: 'missing-dir' })).toBe('No files matched.');
      await run('Write', { file_path: '~/g/one.txt', content: '1' });
      expect(await run('Glob', { pattern: `${sb.homeDir}/g/*.txt` })).toBe(
        `${sb.homeDir}/g/one.txt`,
      );
      expect(await run('Glob', { pattern: '*.txt', path: '~/g' })).toBe(`${sb.homeDir}/g/one.txt`);
      expect(await run('Glob', { pattern: 'many/../notes.*' })).toBe('notes.md');
    });
  });

  describe('Bash', () => {
    it('reports exit code, stdout and stderr in the Leaf format', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Bash', { command: 'echo hi; echo err >&2; exit 3' })).toBe(
        'Exit code: 3\nSTDOUT:\nhi\n\nSTDERR:\nerr\n',
      );
      expect(await run('Bash', { command: 'true', description: 'nothing' })).toBe(
        'Exit code: 0\nSTDOUT:\n\nSTDERR:\n',
      );
      expect(await run('Bash', { command: 'exit 300' })).toBe(
        'Exit code: 44\nSTDOUT:\n\nSTDERR:\n',
      );
    });

    it('runs in the repository root, in a fresh login shell each call, with empty stdin', async ({
      skip,
    }) => {
      if (skipReason) skip();
      expect(await run('Bash', { command: 'pwd' })).toBe(
        `Exit code: 0\nSTDOUT:\n${w}\n\nSTDERR:\n`,
      );
      await run('Bash', { command: 'cd /tmp; export FROG=1' });
      expect(
        await run('Bash', {
          command: 'pwd; echo "${FROG:-unset}"; shopt -q login_shell && echo login',
        }),
      ).toBe(`Exit code: 0\nSTDOUT:\n${w}\nunset\nlogin\n\nSTDERR:\n`);
      expect(await run('Bash', { command: 'cat; echo done' })).toBe(
        'Exit code: 0\nSTDOUT:\ndone\n\nSTDERR:\n',
      );
    });

    it('translates newlines and replaces invalid UTF-8', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Bash', { command: "printf 'a\\r\\nb\\rc'; printf 'x\\r\\n' >&2" })).toBe(
        'Exit code: 0\nSTDOUT:\na\nb\nc\nSTDERR:\nx\n',
      );
      expect(await run('Bash', { command: "printf '\\xff ok \\xc3\\xa9'" })).toBe(
        'Exit code: 0\nSTDOUT:\n\ufffd ok é\nSTDERR:\n',
      );
    });

    it('reports death by a signal as a negative exit code', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Bash', { command: 'echo before; kill -9 $$' })).toBe(
        'Exit code: -9\nSTDOUT:\nbefore\n\nSTDERR:\n',
      );
      expect(await run('Bash', { command: 'kill -TERM $$' })).toBe(
        'Exit code: -15\nSTDOUT:\n\nSTDERR:\n',
      );
    });

    it('truncates to 30000 code points, counting drained output exactly', async ({ skip }) => {
      if (skipReason) skip();
      const head = 'Exit code: 0\nSTDOUT:\n';
      expect(await run('Bash', { command: "head -c 40000 /dev/zero | tr '\\0' x" })).toBe(
        `${head}${'x'.repeat(30000 - head.length)}\n[truncated ${head.length + 40000 + 9 - 30000} chars]`,
      );
      expect(await run('Bash', { command: "head -c 40000 /dev/zero | tr '\\0' x >&2" })).toBe(
        `${head}\nSTDERR:\n${'x'.repeat(30000 - head.length - 9)}\n[truncated ${40000 - (30000 - head.length - 9)} chars]`,
      );
      // 3 MB is drained past the per-stream cap; the count still covers every character.
      const drained = await run('Bash', { command: "yes 'é😀' | head -c 3000000; echo err >&2" });
      const line = 'é😀\n';
      const lineBytes = Buffer.byteLength(line);
      const fullLines = Math.floor(3000000 / lineBytes);
      const tailBytes = 3000000 - fullLines * lineBytes;
      // The cut leaves 'é' and 2 bytes of '😀' (one U+FFFD for the incomplete sequence).
      const tailChars = tailBytes === 0 ? 0 : tailBytes <= 2 ? 1 : 2;
      const total = head.length + fullLines * 3 + tailChars + '\nSTDERR:\nerr\n'.length;
      const visible = Array.from(head + line.repeat(15000))
        .slice(0, 30000)
        .join('');
      expect(drained).toBe(`${visible}\n[truncated ${total - 30000} chars]`);
    });

    it('times out after the given seconds with the raw output so far', async ({ skip }) => {
      if (skipReason) skip();
      expect(
        await run('Bash', { command: "printf 'a\\r\\n'; echo e >&2; sleep 10", timeout: 2 }),
      ).toBe('Timed out after 2.0s\nSTDOUT:\na\r\n\nSTDERR:\ne\n');
      // 250 is read as seconds; 0.25 formats with ties-to-even, as Python's {:.1f}.
      expect(await run('Bash', { command: 'sleep 5', timeout: 0.25 })).toBe(
        'Timed out after 0.2s\nSTDOUT:\n\nSTDERR:\n',
      );
      expect(await run('Bash', { command: 'sleep 5', timeout: 1250 })).toBe(
        'Timed out after 1.2s\nSTDOUT:\n\nSTDERR:\n',
      );
      expect(await run('Bash', { command: 'sleep 5', timeout_ms: 350 })).toBe(
        'Timed out after 0.3s\nSTDOUT:\n\nSTDERR:\n',
      );
      expect(await run('Bash', { command: 'sleep 5', timeout: 0 })).toBe(
        'Timed out after 0.1s\nSTDOUT:\n\nSTDERR:\n',
      );
      expect(await run('Bash', { command: 'sleep 5', timeout: 'NaN' })).toBe(
        'Timed out after 0.1s\nSTDOUT:\n\nSTDERR:\n',
      );
      expect(await run('Bash', { command: 'echo quick', timeout: '30' })).toBe(
        'Exit code: 0\nSTDOUT:\nquick\n\nSTDERR:\n',
      );
    });

    it('reports bad timeouts with float() errors', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Bash', { command: 'echo x', timeout: 'abc' })).toBe(
        "ValueError: could not convert string to float: 'abc'",
      );
      expect(await run('Bash', { command: 'echo x', timeout_ms: '' })).toBe(
        "ValueError: could not convert string to float: ''",
      );
      expect(await run('Bash', { command: 'echo x', timeout: [1] })).toBe(
        "TypeError: float() argument must be a string or a real number, not 'list'",
      );
      // poll() takes a C int of milliseconds: Python's OverflowErrors, in its words.
      expect(await run('Bash', { command: 'echo x', timeout: 2147484000 })).toBe(
        'OverflowError: timeout is too large',
      );
      expect(await run('Bash', { command: 'echo x', timeout: 1e13 })).toBe(
        'OverflowError: timestamp too large to convert to C _PyTime_t',
      );
      expect(await run('Bash', { command: 'echo x', timeout: 'inf' })).toBe(
        'OverflowError: cannot convert float infinity to integer',
      );
      expect(await run('Bash', { command: 'echo x', timeout: 2147483000 })).toBe(
        'Exit code: 0\nSTDOUT:\nx\n\nSTDERR:\n',
      );
    });

    it('kills the whole process group on timeout', async ({ skip }) => {
      if (skipReason) skip();
      const observation = await run('Bash', {
        command: 'sleep 30 & echo $! > ~/bg.pid; sleep 30',
        timeout: 2,
      });
      expect(observation).toBe('Timed out after 2.0s\nSTDOUT:\n\nSTDERR:\n');
      expect(
        await run('Bash', {
          command:
            // A zombie waiting for its reaper counts as gone; give the kernel a moment.
            'pid=$(cat ~/bg.pid); [ -n "$pid" ] || { echo nopid; exit; }; for i in $(seq 50); do if kill -0 "$pid" 2>/dev/null && ! grep -q "^State:.*Z" /proc/$pid/status 2>/dev/null; then sleep 0.1; else echo gone; exit; fi; done; echo alive',
        }),
      ).toBe('Exit code: 0\nSTDOUT:\ngone\n\nSTDERR:\n');
    });

    it('waits for the pipes like Python: a background child holding stdout runs into the timeout', async ({
      skip,
    }) => {
      if (skipReason) skip();
      expect(await run('Bash', { command: 'sleep 10 & echo started', timeout: 2 })).toBe(
        'Timed out after 2.0s\nSTDOUT:\nstarted\n\nSTDERR:\n',
      );
      expect(await run('Bash', { command: 'sleep 3 >/dev/null 2>&1 & echo detached' })).toBe(
        'Exit code: 0\nSTDOUT:\ndetached\n\nSTDERR:\n',
      );
    });

    it('cancels a running command through the signal', async ({ skip }) => {
      if (skipReason) skip();
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 200);
      // Were the signal ignored, the minute-long sleep would run into the test timeout.
      const observation = await executeTool(sb, 'Bash', '{"command": "sleep 60; echo done"}', {
        signal: controller.signal,
      });
      expect(observation).not.toContain('done');
    });

    it('runs str() of a non-string command', async ({ skip }) => {
      if (skipReason) skip();
      expect(await run('Bash', { command: 12, timeout: 10 })).toMatch(
        /^Exit code: 127\nSTDOUT:\n\nSTDERR:\n.*12: command not found\n$/,
      );
    });
  });

  it('lets only sandbox failures escape', async ({ skip }) => {
    if (skipReason) skip();
    const broken: Sandbox = {
      kind: sb.kind,
      workdir: sb.workdir,
      homeDir: sb.homeDir,
      exec: () => Promise.reject(new SandboxFailure('container gone')),
      readFile: () => Promise.reject(new Error('odd failure')),
      readLines: () => Promise.reject(new Error('odd failure')),
      editFile: () => Promise.reject(new Error('odd failure')),
      writeFile: sb.writeFile.bind(sb),
      glob: sb.glob.bind(sb),
      dispose: async () => undefined,
    };
    await expect(executeTool(broken, 'Bash', '{"command": "true"}')).rejects.toBeInstanceOf(
      SandboxFailure,
    );
    expect(await executeTool(broken, 'Read', '{"file_path": "a.py"}')).toBe('Error: odd failure');
  });
});
