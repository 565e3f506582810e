// Python's text semantics where Leaf's observations depend on them. Python counts code
// points where JavaScript counts UTF-16 units, and Leaf's messages quote values with
// Python's repr/str; getting either wrong changes what the model sees.
import { PythonError } from './sandbox.js';
import type { PyValue } from './python-json.js';

/** Code points in `value` (Python's `len`); a lone surrogate counts as one, like in Python. */
export function cpLength(value: string): number {
  let pairs = 0;
  for (let i = 0; i < value.length - 1; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return value.length - pairs;
}

/** `value[start:end]` counted in code points (non-negative bounds only). */
export function cpSlice(value: string, start: number, end = Number.POSITIVE_INFINITY): string {
  const from = unitIndex(value, start);
  const to = end === Number.POSITIVE_INFINITY ? value.length : unitIndex(value, end);
  return value.slice(from, Math.max(from, to));
}

function unitIndex(value: string, codePoints: number): number {
  let index = 0;
  for (let count = 0; count < codePoints && index < value.length; count++) {
    const unit = value.charCodeAt(index);
    const next = value.charCodeAt(index + 1);
    index += unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? 2 : 1;
  }
  return index;
}

/** Leaf's `_truncate`: keep `limit` code points, then say how many were dropped. */
export function truncate(value: string, limit: number): string {
  if (limit <= 0) return value;
  const length = cpLength(value);
  if (length <= limit) return value;
  return `${cpSlice(value, 0, limit)}\n[truncated ${length - limit} chars]`;
}

// eslint-disable-next-line no-control-regex -- these control characters are the point
const LINE_BREAK = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

/** Python's `str.splitlines()` (no ends kept; no trailing empty line). */
export function splitlines(value: string): string[] {
  const lines = value.split(LINE_BREAK);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

// ignoreBOM: Python's utf-8 codec keeps a leading U+FEFF (only utf-8-sig strips it).
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** `bytes.decode('utf-8', errors='replace')`: one U+FFFD per maximal invalid subpart, as CPython. */
export function decodeUtf8(data: Uint8Array): string {
  return decoder.decode(data);
}

/** Universal newlines (text-mode reads): `\r\n` and a lone `\r` become `\n`. */
export function translateNewlines(value: string): string {
  return value.replace(/\r\n?/g, '\n');
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** A UTF-16 unit with no partner: Python's escape for an undecodable byte, or a JSON `\ud800`. */
export function hasLoneSurrogate(value: string): boolean {
  return LONE_SURROGATE.test(value);
}

/**
 * `value.encode('utf-8')`. Python refuses lone surrogates (a JSON `\ud800` escape produces
 * one), so this throws the UnicodeEncodeError Python would raise.
 */
export function encodeUtf8(value: string): Buffer {
  const match = LONE_SURROGATE.exec(value);
  if (match) {
    const start = cpLength(value.slice(0, match.index));
    // CPython reports the whole run of consecutive surrogates.
    let end = start + 1;
    let unit = match.index + 1;
    while (unit < value.length && isLoneSurrogateAt(value, unit)) {
      end++;
      unit++;
    }
    throw surrogatesNotAllowed(start, end - 1, value.charCodeAt(match.index));
  }
  return Buffer.from(value, 'utf8');
}

/** CPython's error for the lone surrogates at code points `first`..`last` (`unit` is the first). */
function surrogatesNotAllowed(first: number, last: number, unit: number): PythonError {
  const detail =
    first === last
      ? `character '${pyEscapeChar(unit)}' in position ${first}`
      : `characters in position ${first}-${last}`;
  return new PythonError(
    'UnicodeEncodeError',
    `'utf-8' codec can't encode ${detail}: surrogates not allowed`,
  );
}

/**
 * `os.fsencode(value)`: UTF-8 with surrogateescape, as Python encodes every path and argv
 * string. A lone U+DC80..U+DCFF stands for the undecodable byte 0x80..0xFF; any other lone
 * surrogate raises the UnicodeEncodeError Python raises, positioned in `value`.
 */
export function fsencode(value: string): Buffer {
  if (!LONE_SURROGATE.test(value)) return Buffer.from(value, 'utf8');
  const parts: Buffer[] = [];
  let plainFrom = 0;
  let codePoints = 0;
  for (let unit = 0; unit < value.length;) {
    if (!isLoneSurrogateAt(value, unit)) {
      const width = value.codePointAt(unit)! > 0xffff ? 2 : 1;
      unit += width;
      codePoints++;
      continue;
    }
    parts.push(Buffer.from(value.slice(plainFrom, unit), 'utf8'));
    // CPython escapes the run up to its first unescapable surrogate, then reports from there
    // to the end of the run.
    let failedAt = -1;
    let failedUnit = 0;
    const bytes: number[] = [];
    while (unit < value.length && isLoneSurrogateAt(value, unit)) {
      const code = value.charCodeAt(unit);
      if (failedAt < 0 && code >= 0xdc80 && code <= 0xdcff) bytes.push(code & 0xff);
      else if (failedAt < 0) {
        failedAt = codePoints;
        failedUnit = code;
      }
      unit++;
      codePoints++;
    }
    if (failedAt >= 0) throw surrogatesNotAllowed(failedAt, codePoints - 1, failedUnit);
    parts.push(Buffer.from(bytes));
    plainFrom = unit;
  }
  parts.push(Buffer.from(value.slice(plainFrom), 'utf8'));
  return Buffer.concat(parts);
}

/** A path for Node's fs: the string itself, or Python's bytes when it holds escaped bytes. */
export function fsPath(value: string): string | Buffer {
  return LONE_SURROGATE.test(value) ? fsencode(value) : value;
}

function isLoneSurrogateAt(value: string, index: number): boolean {
  const unit = value.charCodeAt(index);
  if (unit >= 0xd800 && unit <= 0xdbff) {
    const next = value.charCodeAt(index + 1);
    return !(next >= 0xdc00 && next <= 0xdfff);
  }
  if (unit >= 0xdc00 && unit <= 0xdfff) {
    const previous = value.charCodeAt(index - 1);
    return !(previous >= 0xd800 && previous <= 0xdbff);
  }
  return false;
}

// Python's str.isprintable() is false for these general categories (space excepted).
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

function pyEscapeChar(codePoint: number): string {
  if (codePoint < 0x100) return `\\x${codePoint.toString(16).padStart(2, '0')}`;
  if (codePoint < 0x10000) return `\\u${codePoint.toString(16).padStart(4, '0')}`;
  return `\\U${codePoint.toString(16).padStart(8, '0')}`;
}

/** Python's `repr(str)`: quote choice and escapes as CPython writes them. */
export function pyRepr(value: string): string {
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of value) {
    const codePoint = ch.codePointAt(0) as number;
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (ch === '\t') out += '\\t';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch !== ' ' && NON_PRINTABLE.test(ch)) out += pyEscapeChar(codePoint);
    else out += ch;
  }
  return out + quote;
}

/** Python's `repr(float)`: shortest round-trip digits, exponent outside 1e-4 <= |x| < 1e16. */
export function pyFloatRepr(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (value === Number.POSITIVE_INFINITY) return 'inf';
  if (value === Number.NEGATIVE_INFINITY) return '-inf';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const sign = value < 0 ? '-' : '';
  const [mantissa, exponentText] = Math.abs(value).toExponential().split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const exponent = Number(exponentText);
  // Python's decpt: the value is 0.<digits> × 10^decpt.
  const decpt = exponent + 1;
  if (decpt > 16 || decpt < -3) {
    const expSign = exponent < 0 ? '-' : '+';
    const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${body}e${expSign}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
  if (decpt >= digits.length) return `${sign}${digits}${'0'.repeat(decpt - digits.length)}.0`;
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

/** Python's `str(v)` of a json.loads value. */
export function pyStr(value: PyValue): string {
  return typeof value === 'string' ? value : pyValueRepr(value);
}

/** Python's `repr(v)` of a json.loads value. */
export function pyValueRepr(value: PyValue): string {
  if (value === null) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return pyFloatRepr(value);
  if (typeof value === 'string') return pyRepr(value);
  if (Array.isArray(value)) return `[${value.map(pyValueRepr).join(', ')}]`;
  const entries = [...value].map(([key, inner]) => `${pyRepr(key)}: ${pyValueRepr(inner)}`);
  return `{${entries.join(', ')}}`;
}

/** Python's type name of a json.loads value, for TypeError messages. */
export function pyTypeName(value: PyValue): string {
  if (value === null) return 'NoneType';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'float';
  if (typeof value === 'string') return 'str';
  return Array.isArray(value) ? 'list' : 'dict';
}

/** Python's `bool(v)`. */
export function pyTruthy(value: PyValue | undefined): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value !== 0n;
  if (typeof value === 'number') return value !== 0;
  if (typeof value === 'string' || Array.isArray(value)) return value.length > 0;
  return value.size > 0;
}

/** Leaf's `_truthy`: a real boolean, or `1`/`true`/`yes`/`on` after str/strip/lower. */
export function truthy(value: PyValue | undefined): boolean {
  if (typeof value === 'boolean') return value;
  const text = pyTruthy(value) ? pyStr(value as PyValue) : '';
  return ['1', 'true', 'yes', 'on'].includes(pyStrip(text).toLowerCase());
}

// str.isspace() / str.strip() whitespace in CPython.
const PY_SPACE =
  '\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, 'g');

/** Python's `str.strip()` with no argument. */
export function pyStrip(value: string): string {
  return value.replace(STRIP, '');
}

const DECIMAL_DIGIT = /\p{Nd}/u;

/**
 * int()/float() accept any Unicode decimal digit (CPython maps them to ASCII first).
 * Each Nd run in Unicode is a whole number of 0–9 sequences, so the value is the
 * distance from the run's start modulo 10.
 */
function asciiDigits(value: string): string | undefined {
  let out = '';
  for (const ch of value) {
    const codePoint = ch.codePointAt(0) as number;
    if (codePoint < 0x80) {
      out += ch;
      continue;
    }
    if (!DECIMAL_DIGIT.test(ch)) return undefined;
    let start = codePoint;
    while (DECIMAL_DIGIT.test(String.fromCodePoint(start - 1))) start--;
    out += String((codePoint - start) % 10);
  }
  return out;
}

const INT_LITERAL = /^[+-]?[0-9](?:_?[0-9])*$/;
const INT_MAX_STR_DIGITS = 4300;

/** Python's `int(v)` of a json.loads value, raising Python's errors as PythonError. */
export function pyInt(value: PyValue): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'boolean') return value ? 1n : 0n;
  if (typeof value === 'number') {
    if (Number.isNaN(value))
      throw new PythonError('ValueError', 'cannot convert float NaN to integer');
    if (!Number.isFinite(value)) {
      throw new PythonError('OverflowError', 'cannot convert float infinity to integer');
    }
    return BigInt(Math.trunc(value));
  }
  if (typeof value === 'string') {
    const ascii = asciiDigits(pyStrip(value));
    if (ascii !== undefined && INT_LITERAL.test(ascii)) {
      const digits = ascii.replace(/[+_-]/g, '');
      if (digits.length > INT_MAX_STR_DIGITS) {
        throw new PythonError(
          'ValueError',
          `Exceeds the limit (${INT_MAX_STR_DIGITS} digits) for integer string conversion: value has ${digits.length} digits; use sys.set_int_max_str_digits() to increase the limit`,
        );
      }
      const magnitude = BigInt(digits);
      return ascii.startsWith('-') ? -magnitude : magnitude;
    }
    // CPython formats this message with %.200R: the repr is cut at 200 code points.
    const repr = cpSlice(pyRepr(value), 0, 200);
    throw new PythonError('ValueError', `invalid literal for int() with base 10: ${repr}`);
  }
  throw new PythonError(
    'TypeError',
    `int() argument must be a string, a bytes-like object or a real number, not '${pyTypeName(value)}'`,
  );
}

const DIGITS = '[0-9](?:_?[0-9])*';
const FLOAT_LITERAL = new RegExp(
  `^[+-]?(?:(?:${DIGITS}(?:\\.(?:${DIGITS})?)?|\\.${DIGITS})(?:[eE][+-]?${DIGITS})?|inf|infinity|nan)$`,
  'i',
);

/** Python's `float(v)` of a json.loads value, raising Python's errors as PythonError. */
export function pyFloat(value: PyValue): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'bigint') {
    const result = Number(value);
    if (!Number.isFinite(result))
      throw new PythonError('OverflowError', 'int too large to convert to float');
    return result;
  }
  if (typeof value === 'string') {
    const ascii = asciiDigits(pyStrip(value));
    if (ascii !== undefined && FLOAT_LITERAL.test(ascii)) {
      const text = ascii.replace(/_/g, '').toLowerCase();
      const negative = text.startsWith('-');
      const unsigned = text.replace(/^[+-]/, '');
      if (unsigned === 'nan') return Number.NaN;
      if (unsigned === 'inf' || unsigned === 'infinity') {
        return negative ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
      }
      return Number(text);
    }
    throw new PythonError('ValueError', `could not convert string to float: ${pyRepr(value)}`);
  }
  throw new PythonError(
    'TypeError',
    `float() argument must be a string or a real number, not '${pyTypeName(value)}'`,
  );
}

/** Python's `f"{value:.1f}"`: exact decimal rounding, ties to even (toFixed rounds ties up). */
export function pyFormatFixed1(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  // A double lies exactly halfway between two tenths only when 4·x is an odd integer.
  const quarters = value * 4;
  if (Number.isInteger(quarters) && Math.abs(quarters % 2) === 1 && Math.abs(value) < 1e15) {
    const tenths = value * 10;
    let rounded = Math.floor(tenths);
    if (rounded % 2 !== 0) rounded += 1;
    const text = (rounded / 10).toFixed(1);
    return value < 0 && rounded === 0 ? `-${text}` : text;
  }
  const text = Math.abs(value) < 1e21 ? value.toFixed(1) : `${BigInt(value).toString()}.0`;
  return Object.is(value, -0) ? '-0.0' : text;
}

/** Python's `max(a, b)`: returns `a` unless `b > a` (so a NaN `b` is ignored). */
export function pyMax(a: number, b: number): number {
  return b > a ? b : a;
}
