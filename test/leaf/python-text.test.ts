// Python-compatible text helpers, checked against the real python3 on this machine.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { pyJsonLoads, type PyValue } from '../../src/leaf/python-json.js';
import {
  cpLength,
  cpSlice,
  decodeUtf8,
  encodeUtf8,
  pyFloat,
  pyFloatRepr,
  pyFormatFixed1,
  pyInt,
  pyMax,
  pyRepr,
  pyStr,
  pyStrip,
  pyTruthy,
  splitlines,
  translateNewlines,
  truncate,
  truthy,
} from '../../src/leaf/python-text.js';
import { PythonError } from '../../src/leaf/sandbox.js';

/**
 * Runs `body` in python3 over a JSON list of inputs (variable `cases`); the script sets
 * `out`, a list with one result per input. ASCII-only JSON keeps lone surrogates intact.
 */
function python<T>(body: string, cases: unknown[]): T[] {
  const script = [
    'import json, sys',
    'cases = json.loads(sys.stdin.read())',
    'def err(e): return f"{type(e).__name__}: {e}"',
    body,
    'sys.stdout.write(json.dumps(out))',
  ].join('\n');
  return JSON.parse(
    execFileSync('python3', ['-c', script], { input: JSON.stringify(cases) }).toString(),
  ) as T[];
}

function pythonError(fn: () => unknown): string {
  try {
    return JSON.stringify(fn(), (_key, value: unknown) =>
      typeof value === 'bigint' ? value.toString() : value,
    );
  } catch (error) {
    if (error instanceof PythonError) return error.toObservation();
    throw error;
  }
}

const TRICKY_STRINGS = [
  '',
  'a',
  'a\n',
  'a\n\n',
  '\n',
  'a\r\nb\rc\nd',
  'a\r\r\nb',
  'x\vy\fz\x1cw\x1dv\x1eu\x1ft',
  'p\x85q\u2028r\u2029s',
  'trailing\r',
  '\r\n\r\n',
  "it's",
  'say "hi"',
  'both \' and "',
  'back\\slash',
  'tab\tnul\0bell\x07del\x7f',
  'nbsp\xa0soft\xadzw\u200bbom\ufeff',
  'emoji 😀 and 𝔘𝔫𝔦',
  'lone \ud800 high',
  'lone \udc00 low',
  'pair \ud83d\ude00',
  'private \ue000 unassigned \u0378 tag \u{e0001}',
  'ideographic\u3000space',
  'é combining e\u0301',
];

describe('splitlines', () => {
  it('splits exactly like str.splitlines()', () => {
    const expected = python<string[]>('out = [c.splitlines() for c in cases]', TRICKY_STRINGS);
    expect(TRICKY_STRINGS.map(splitlines)).toEqual(expected);
  });
});

describe('pyRepr', () => {
  it('quotes and escapes like repr(str)', () => {
    const expected = python<string>('out = [repr(c) for c in cases]', TRICKY_STRINGS);
    expect(TRICKY_STRINGS.map(pyRepr)).toEqual(expected);
  });
});

describe('code points', () => {
  it('counts and slices code points like len() and str[a:b]', () => {
    const expected = python<[number, string, string]>(
      'out = [[len(c), c[:3], c[2:5]] for c in cases]',
      TRICKY_STRINGS,
    );
    expect(TRICKY_STRINGS.map((s) => [cpLength(s), cpSlice(s, 0, 3), cpSlice(s, 2, 5)])).toEqual(
      expected,
    );
  });

  it('truncates with the exact marker, counting code points', () => {
    expect(truncate('abcdef', 6)).toBe('abcdef');
    expect(truncate('abcdefg', 6)).toBe('abcdef\n[truncated 1 chars]');
    expect(truncate('😀😀😀', 2)).toBe('😀😀\n[truncated 1 chars]');
    expect(truncate('x'.repeat(25), 0)).toBe('x'.repeat(25));
  });
});

describe('decodeUtf8 and newlines', () => {
  it('replaces invalid UTF-8 like bytes.decode("utf-8", "replace") and keeps a BOM', () => {
    const samples = [
      [0xf0, 0x9f, 0x98],
      [0xed, 0xa0, 0x80],
      [0xc0, 0xaf],
      [0xe0, 0x80, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0x61, 0xff, 0x62],
      [0xef, 0xbb, 0xbf, 0x78],
      [0xe2, 0x82, 0x61, 0xe2, 0x82, 0xac],
      [0xf8, 0x88, 0x80, 0x80, 0x80],
      [0xc3],
      [0x80, 0x80, 0xc3, 0xa9],
    ];
    const expected = python<string>(
      'out = [bytes(c).decode("utf-8", "replace") for c in cases]',
      samples,
    );
    expect(samples.map((bytes) => decodeUtf8(Uint8Array.from(bytes)))).toEqual(expected);
  });

  it('translates newlines like a universal-newline text read', () => {
    const expected = python<string>(
      'import io\nout = [io.TextIOWrapper(io.BytesIO(c.encode("utf-8", "surrogatepass")), encoding="utf-8", errors="replace").read() for c in cases]',
      TRICKY_STRINGS.filter((s) => !/[\ud800-\udfff]/.test(s) || /\ud83d\ude00/.test(s)),
    );
    const inputs = TRICKY_STRINGS.filter(
      (s) => !/[\ud800-\udfff]/.test(s) || /\ud83d\ude00/.test(s),
    );
    expect(inputs.map(translateNewlines)).toEqual(expected);
  });
});

describe('encodeUtf8', () => {
  it('refuses lone surrogates with the UnicodeEncodeError Python raises', () => {
    const cases = [
      'ok 😀',
      'ab\ud800cd',
      '😀x\udfff',
      'a\ud800\udbffz',
      '\udc00\ud800',
      'fine \ud83d\ude00',
    ];
    const expected = python<string>(
      'out = []\nfor c in cases:\n    try: out.append(c.encode("utf-8").hex())\n    except Exception as e: out.append(err(e))',
      cases,
    );
    const actual = cases.map((value) => {
      try {
        return encodeUtf8(value).toString('hex');
      } catch (error) {
        return (error as PythonError).toObservation();
      }
    });
    expect(actual).toEqual(expected);
  });
});

const JSON_VALUES = [
  'null',
  'true',
  'false',
  '0',
  '-0',
  '7',
  '-12',
  '123456789012345678901234567890',
  '1.0',
  '-0.0',
  '1.5',
  '2.7',
  '-2.7',
  '1e16',
  '1e15',
  '1.5e300',
  '1e-5',
  '0.0001',
  '123456789.123456789',
  '1E400',
  '-1e400',
  'NaN',
  'Infinity',
  '-Infinity',
  '""',
  '"abc"',
  '"  3 "',
  '"\\t42\\n"',
  '"1_000"',
  '"1__0"',
  '"_1"',
  '"+5"',
  '"-0"',
  '"0x10"',
  '"3.0"',
  '"1e3"',
  '" "',
  '"\\u0663\\u0664"',
  '"\\u00a012\\u3000"',
  '"\\ud835\\udfd7"',
  '"inf"',
  '"-Infinity"',
  '"nan"',
  '".5"',
  '"5."',
  '"1_0.5_0"',
  '"1._5"',
  '"abc"',
  `"${'x'.repeat(300)}"`,
  '[]',
  '[1, 2.5, "a\'b", null, true]',
  '{}',
  '{"b": 1, "1": [false], "a": {"x": "y"}}',
  '{"k": 1, "k": 2}',
  '["\\u0000", "\\u00e9", "\\u2028"]',
];

describe('pyJsonLoads and pyStr', () => {
  it('gives str(json.loads(text)) for every kind of value', () => {
    const expected = python<string>('out = [str(json.loads(c)) for c in cases]', JSON_VALUES);
    expect(JSON_VALUES.map((text) => pyStr(pyJsonLoads(text)))).toEqual(expected);
  });

  it('accepts and rejects the same documents as json.loads', () => {
    const docs = [
      '{"a": 1}',
      ' {"a" : [1 , 2] } ',
      '{"a": 1,}',
      '[1,]',
      "{'a': 1}",
      '{"a": 01}',
      '{"a": .5}',
      '{"a": -}',
      '{"a": "\t"}',
      '{"a": "\\x"}',
      '{"a": "\\u12"}',
      '\ufeff{}',
      '{"a": 1} x',
      '{"a": nan}',
      '{"a": -NaN}',
      '',
      '   ',
      '{"a": tru}',
      '{"a": 1e}',
      '{"a": 1.}',
      '{"a": [}',
      '"\\ud800"',
    ];
    const expected = python<boolean>(
      'out = []\nfor c in cases:\n    try: json.loads(c); out.append(True)\n    except ValueError: out.append(False)',
      docs,
    );
    const actual = docs.map((doc) => {
      try {
        pyJsonLoads(doc);
        return true;
      } catch {
        return false;
      }
    });
    expect(actual).toEqual(expected);
  });

  it('keeps dict order and distinguishes ints from floats', () => {
    const value = pyJsonLoads('{"b": 1, "2": 1.0, "a": 1}') as Map<string, PyValue>;
    expect([...value.keys()]).toEqual(['b', '2', 'a']);
    expect(value.get('b')).toBe(1n);
    expect(value.get('2')).toBe(1);
  });
});

describe('int() and float()', () => {
  it('matches int(v) results and error messages', () => {
    const expected = python<string>(
      'out = []\nfor c in cases:\n    try: out.append(json.dumps(str(int(json.loads(c)))))\n    except Exception as e: out.append(err(e))',
      JSON_VALUES,
    );
    expect(
      JSON_VALUES.map((text) => pythonError(() => pyInt(pyJsonLoads(text)).toString())),
    ).toEqual(expected);
  });

  it('matches float(v) results and error messages', () => {
    const expected = python<string>(
      'out = []\nfor c in cases:\n    try: out.append(json.dumps(repr(float(json.loads(c)))))\n    except Exception as e: out.append(err(e))',
      JSON_VALUES,
    );
    expect(
      JSON_VALUES.map((text) => pythonError(() => pyFloatRepr(pyFloat(pyJsonLoads(text))))),
    ).toEqual(expected);
  });

  it('formats floats like repr(float) across magnitudes', () => {
    const values: number[] = [];
    let seed = 12345;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let i = 0; i < 300; i++)
      values.push((random() - 0.5) * 10 ** Math.floor(random() * 60 - 30));
    values.push(0.1, 0.2 + 0.1, 1 / 3, 5e-324, 1.7976931348623157e308, 1e22, 123456789012345680000);
    const expected = python<string>('out = [repr(float(c)) for c in cases]', values);
    expect(values.map(pyFloatRepr)).toEqual(expected);
  });

  it('formats {:.1f} with ties to even like Python', () => {
    const values = [
      0.1, 0.25, 0.35, 0.75, 1.25, 2.5, 120, 0.05, 0.15, 1.45, 1000.05, 3.999, 1e300, -0.25, 12.75,
      1e21,
    ];
    const expected = python<string>('out = [f"{float(c):.1f}" for c in cases]', values);
    expect(values.map(pyFormatFixed1)).toEqual(expected);
  });
});

describe('truthiness', () => {
  it("matches Leaf's _truthy and Python's bool()", () => {
    const values = [
      'true',
      'false',
      'null',
      '1',
      '0',
      '2',
      '1.0',
      '"1"',
      '"True"',
      '" YES "',
      '"on"',
      '"On\\n"',
      '"off"',
      '"no"',
      '""',
      '[]',
      '[1]',
      '{}',
      '0.0',
      'NaN',
    ];
    const expected = python<[boolean, boolean]>(
      [
        'def _truthy(value):',
        '    if isinstance(value, bool): return value',
        '    return str(value or "").strip().lower() in {"1", "true", "yes", "on"}',
        'out = [[_truthy(json.loads(c)), bool(json.loads(c))] for c in cases]',
      ].join('\n'),
      values,
    );
    expect(values.map((text) => [truthy(pyJsonLoads(text)), pyTruthy(pyJsonLoads(text))])).toEqual(
      expected,
    );
  });

  it('strips Unicode whitespace like str.strip() and keeps max(a, NaN) == a', () => {
    expect(pyStrip('\u3000\x1c a b \x85\xa0')).toBe('a b');
    expect(pyMax(0.1, Number.NaN)).toBe(0.1);
    expect(pyMax(0.1, 5)).toBe(5);
  });
});
