// Every problem of one config file's text, worded as the run words the first (one line, naming
// the key) and placed where the file says it. The text is untrusted and may be hostile: binary,
// nested thousands of levels deep, or a YAML bomb of aliases; each of those is one problem too,
// found before the parser could spend its time or stack on it.
import { isMap, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import { nearestKey } from './nearest-key.js';
import { KNOWN_KEYS, RepoConfig } from './repo-config-schema.js';
import { nestingExcess } from './yaml-nesting.js';

export interface ConfigProblem {
  /** What is wrong, as the run says it after `<file>: `. */
  message: string;
  /** 1-based, where the file shows it (absent for the file as a whole). */
  line?: number;
  column?: number;
  /** The key (or `key[i]`) it is about. */
  key?: string;
}

export interface CheckedConfig {
  /** In the order the run meets them: the run reports the first. */
  problems: ConfigProblem[];
  /** The file's mapping as written (nothing when it has problems); `{}` for an empty file. */
  data?: Record<string, unknown>;
  /** `data` validated, with the defaults (nothing when it has problems). */
  config?: RepoConfig;
}

/** A frognano config nests a list in a mapping: three levels. Far more is an attack. */
export const MAX_NESTING = 16;
/** Alias expansions allowed (the `yaml` package's count); a handful is all a config needs. */
const MAX_ALIAS_COUNT = 100;

const BINARY = 'is a binary file, not YAML text';

/** Checks a file's bytes: they must be UTF-8 text before they are YAML. */
export function checkConfigBytes(bytes: Uint8Array): CheckedConfig {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { problems: [{ message: BINARY }] };
  }
  return checkConfigText(text);
}

/**
 * What the words of a problem may hold: `quoteValues: false` for a file the run fetched from
 * another repository, whose text may be anything (a passphrase): no value, no unknown key, no
 * parser words, only the line and the known key.
 */
export interface CheckOptions {
  quoteValues?: boolean;
}

export function checkConfigText(text: string, options: CheckOptions = {}): CheckedConfig {
  const quote = options.quoteValues !== false;
  if (text.includes('\0')) return { problems: [{ message: BINARY }] };
  const lines = new LineCounter();
  const excess = nestingExcess(text, MAX_NESTING);
  if (excess) {
    const where = lineCol(text, excess.offset);
    return {
      problems: [
        {
          message: `nests values more than ${MAX_NESTING} levels deep at line ${where.line}, column ${where.column} (a frognano config needs 3)`,
          ...where,
        },
      ],
    };
  }
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true, lineCounter: lines });
  if (doc.errors.length > 0)
    return { problems: inFileOrder(doc.errors.map((e) => yamlProblem(e, quote))) };
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    if (!(error instanceof ReferenceError)) throw error;
    return {
      problems: [
        {
          message:
            'uses YAML aliases (*name) to expand to too much data, which is how a YAML bomb works: write the values out',
        },
      ],
    };
  }
  if (data === null || data === undefined) data = {};
  if (typeof data !== 'object' || Array.isArray(data)) {
    return {
      problems: [
        {
          message: `must be a mapping of keys (${KNOWN_KEYS.join(', ')}) to values${quote ? ` (got ${describe(data)})` : ''}`,
          line: 1,
          column: 1,
        },
      ],
    };
  }
  const parsed = RepoConfig.safeParse(data, { reportInput: true });
  const mapping = data as Record<string, unknown>;
  if (parsed.success) return { problems: [], data: mapping, config: parsed.data };
  const locate = locator(doc, lines);
  const problems = parsed.error.issues.flatMap((issue) => schemaProblems(issue, locate, quote));
  return { problems: inFileOrder(problems) };
}

/**
 * In the file's order (the schema reports keys in its own): the first is the one a run names,
 * `config show` too, and the first `config validate` lists.
 */
function inFileOrder(problems: ConfigProblem[]): ConfigProblem[] {
  return [...problems].sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
}

/** The parser's words where they name its own API rather than the file. */
const YAML_WORDS: Record<string, string> = {
  MULTIPLE_DOCS: 'holds more than one YAML document (a --- line after the first one): keep one',
};

function yamlProblem(
  error: {
    code?: string;
    message: string;
    linePos?: [{ line: number; col: number }, ...unknown[]];
  },
  quote: boolean,
): ConfigProblem {
  const where = error.linePos?.[0];
  const at = where ? ` at line ${where.line}, column ${where.col}` : '';
  // The parser's message may quote the file (an alias's name); its code never does.
  const code = (error.code ?? 'syntax error').toLowerCase().replace(/_/g, ' ');
  const first =
    YAML_WORDS[error.code ?? ''] ??
    (quote
      ? (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')
      : code);
  return {
    message: `invalid YAML${at}: ${first}`,
    ...(where ? { line: where.line, column: where.col } : {}),
  };
}

type Issue = z.core.$ZodIssue;
type Locate = (
  path: readonly PropertyKey[],
  keyOnly?: boolean,
) => { line: number; column: number } | undefined;

function schemaProblems(raw: Issue, locate: Locate, quote: boolean): ConfigProblem[] {
  const issue = deepestIssue(raw);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => {
      const near = nearestKey(key, KNOWN_KEYS);
      const hint = near ? `, did you mean "${near}"?` : '';
      const named = quote ? `unknown key "${key}"` : 'an unknown key';
      return {
        message: `${named}${hint} (expected one of: ${KNOWN_KEYS.join(', ')})`,
        ...(quote ? { key } : {}),
        ...locate([...issue.path, key], true),
      };
    });
  }
  // Only known keys reach here: the path names them (and list indexes), never a value.
  const keyPath = formatPath(issue.path);
  const got = quote && 'input' in issue ? ` (got ${describe(issue.input)})` : '';
  return [
    {
      message: `${keyPath} ${issue.message}${got}`,
      ...(issue.path.length > 0 ? { key: keyPath } : {}),
      ...locate(issue.path),
    },
  ];
}

/** For `string | string[]` a union error hides the useful one: `setup[2] must be ...`. */
function deepestIssue(issue: Issue): Issue {
  if (issue.code !== 'invalid_union') return issue;
  let best: Issue | undefined;
  for (const option of issue.errors) {
    for (const inner of option) {
      if (inner.path.length > 0 && (!best || inner.path.length > best.path.length)) best = inner;
    }
  }
  return best ? { ...best, path: [...issue.path, ...best.path] } : issue;
}

/** Where a key (or its value) is in the file: the value's node, or with `keyOnly` the key's. */
function locator(doc: Document, lines: LineCounter): Locate {
  return (path, keyOnly = false) => {
    const parentPath = path.slice(0, -1);
    const last = path[path.length - 1];
    const parent =
      parentPath.length === 0 ? doc.contents : doc.getIn(parentPath as unknown[], true);
    let offset: number | undefined;
    if (isMap(parent) && last !== undefined) {
      const pair = parent.items.find((p) => isScalar(p.key) && p.key.value === last);
      const node = keyOnly ? pair?.key : (pair?.value ?? pair?.key);
      offset = (node as { range?: [number, number, number] } | undefined)?.range?.[0];
    } else if (last !== undefined) {
      const node = doc.getIn(path as unknown[], true) as
        { range?: [number, number, number] } | undefined;
      offset = node?.range?.[0];
    }
    if (offset === undefined) return undefined;
    const pos = lines.linePos(offset);
    return { line: pos.line, column: pos.col };
  };
}

function formatPath(parts: readonly PropertyKey[]): string {
  let out = '';
  for (const part of parts) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out || '(top level)';
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  // `!!binary` gives bytes, which are no mapping.
  if (ArrayBuffer.isView(value)) return 'binary data';
  if (typeof value === 'object') return 'a mapping';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function lineCol(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line += 1;
    start = i + 1;
  }
  return { line, column: offset - start + 1 };
}
