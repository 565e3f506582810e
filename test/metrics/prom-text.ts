// A reader for the Prometheus text exposition format (0.0.4), so tests assert on samples, not
// on snapshots of the page.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  help: Map<string, string>;
  type: Map<string, string>;
  samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;

export function parseExposition(text: string): Exposition {
  const out: Exposition = { help: new Map(), type: new Map(), samples: [] };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      (meta[1] === 'HELP' ? out.help : out.type).set(meta[2]!, meta[3]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    const raw = m[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < raw.length) {
      const l = LABEL.exec(raw);
      if (!l) throw new Error(`bad labels in: ${line}`);
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    // Prometheus parses values with Go's ParseFloat: NaN and Inf in any case (prom-client
    // writes `Nan` before the event-loop monitor has a figure).
    const raw3 = m[3]!.toLowerCase();
    const value = /^[+-]?inf$/.test(raw3)
      ? raw3.startsWith('-')
        ? -Infinity
        : Infinity
      : raw3 === 'nan'
        ? NaN
        : Number(m[3]);
    if (Number.isNaN(value) && raw3 !== 'nan') throw new Error(`bad value in: ${line}`);
    out.samples.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** The value of the one sample with this name whose labels include `labels` (undefined: none). */
export function sampleValue(
  exposition: Exposition,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = exposition.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) {
    throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  }
  return found[0]?.value;
}

export async function scrape(
  url: string,
): Promise<{ contentType: string; exposition: Exposition }> {
  const res = await fetch(`${url}/metrics`);
  if (res.status !== 200) throw new Error(`GET ${url}/metrics answered ${res.status}`);
  return {
    contentType: res.headers.get('content-type') ?? '',
    exposition: parseExposition(await res.text()),
  };
}
