// Python's json.loads, as Leaf parses tool-call arguments. JavaScript's JSON.parse loses
// facts the observations depend on: `1` and `1.0` are different values in Python (`str()`
// gives "1" and "1.0"), integers are unbounded, and Python also accepts `NaN`,
// `Infinity` and `-Infinity`. Object key order is kept as written (a Map), as in a dict.

/** A value as Python's json.loads returns it: int → bigint, float → number, dict → Map. */
export type PyValue = null | boolean | bigint | number | string | PyValue[] | PyDict;
export type PyDict = Map<string, PyValue>;

export class PyJsonDecodeError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(`${message}: char ${position}`);
    this.name = 'JSONDecodeError';
  }
}

const WHITESPACE = /[ \t\n\r]*/y;
const NUMBER = /(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;

/** Parses like Python's `json.loads(text)`; throws PyJsonDecodeError where Python raises. */
export function pyJsonLoads(text: string): PyValue {
  const parser = new Parser(text);
  parser.skipWhitespace();
  const value = parser.value();
  parser.skipWhitespace();
  if (parser.pos !== text.length) throw new PyJsonDecodeError('Extra data', parser.pos);
  return value;
}

class Parser {
  pos = 0;

  constructor(private readonly text: string) {}

  skipWhitespace(): void {
    WHITESPACE.lastIndex = this.pos;
    WHITESPACE.exec(this.text);
    this.pos = WHITESPACE.lastIndex;
  }

  value(): PyValue {
    const { text, pos } = this;
    const ch = text[pos];
    if (ch === '"') return this.string();
    if (ch === '{') return this.object();
    if (ch === '[') return this.array();
    for (const [word, literal] of LITERALS) {
      if (text.startsWith(word, pos)) {
        this.pos = pos + word.length;
        return literal;
      }
    }
    NUMBER.lastIndex = pos;
    const match = NUMBER.exec(text);
    if (match) {
      this.pos = NUMBER.lastIndex;
      if (match[2] === undefined && match[3] === undefined) return BigInt(match[1] as string);
      return Number(match[0]);
    }
    throw new PyJsonDecodeError('Expecting value', pos);
  }

  string(): string {
    const { text } = this;
    const start = this.pos;
    // A scan instead of one big regex: V8's regex backtracking stack overflows on
    // string literals of many megabytes.
    let i = start + 1;
    for (;;) {
      const code = text.charCodeAt(i);
      if (Number.isNaN(code) || code < 0x20) throw new PyJsonDecodeError('Invalid string', start);
      if (code === 0x22) break;
      if (code === 0x5c) {
        ESCAPE.lastIndex = i;
        if (!ESCAPE.test(text)) throw new PyJsonDecodeError('Invalid \\escape', i);
        i = ESCAPE.lastIndex;
      } else {
        i++;
      }
    }
    this.pos = i + 1;
    // The literal is valid JSON here, and JSON.parse decodes escapes (lone surrogates
    // included) exactly as Python does.
    return JSON.parse(text.slice(start, i + 1)) as string;
  }

  object(): PyDict {
    const result: PyDict = new Map();
    this.pos += 1;
    this.skipWhitespace();
    if (this.text[this.pos] === '}') {
      this.pos += 1;
      return result;
    }
    for (;;) {
      if (this.text[this.pos] !== '"') {
        throw new PyJsonDecodeError('Expecting property name enclosed in double quotes', this.pos);
      }
      const key = this.string();
      this.skipWhitespace();
      if (this.text[this.pos] !== ':')
        throw new PyJsonDecodeError("Expecting ':' delimiter", this.pos);
      this.pos += 1;
      this.skipWhitespace();
      // Like a dict literal: a repeated key keeps its first position and its last value.
      result.set(key, this.value());
      this.skipWhitespace();
      const next = this.text[this.pos];
      this.pos += 1;
      if (next === '}') return result;
      if (next !== ',') throw new PyJsonDecodeError("Expecting ',' delimiter", this.pos - 1);
      this.skipWhitespace();
    }
  }

  array(): PyValue[] {
    const result: PyValue[] = [];
    this.pos += 1;
    this.skipWhitespace();
    if (this.text[this.pos] === ']') {
      this.pos += 1;
      return result;
    }
    for (;;) {
      result.push(this.value());
      this.skipWhitespace();
      const next = this.text[this.pos];
      this.pos += 1;
      if (next === ']') return result;
      if (next !== ',') throw new PyJsonDecodeError("Expecting ',' delimiter", this.pos - 1);
      this.skipWhitespace();
    }
  }
}

const LITERALS: ReadonlyArray<readonly [string, PyValue]> = [
  ['null', null],
  ['true', true],
  ['false', false],
  ['NaN', Number.NaN],
  ['Infinity', Number.POSITIVE_INFINITY],
  ['-Infinity', Number.NEGATIVE_INFINITY],
];
