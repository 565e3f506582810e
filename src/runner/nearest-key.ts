// "did you mean": the known key closest to a misspelt one, when one is close enough to be meant.

/** The known key at the smallest edit distance from `key` (at most a third of its length). */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  const wanted = key.toLowerCase();
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(wanted, candidate.toLowerCase());
    if (!best || distance < best.distance) best = { key: candidate, distance };
  }
  const allowed = Math.max(1, Math.floor(Math.max(key.length, best?.key.length ?? 0) / 3));
  if (best && best.distance <= allowed) return best.key;
  return sameFirstWords(wanted.replace(/-/g, '_'), known);
}

/**
 * A key that is a known one's first words (`timeout` for `timeout_minutes`) or a known one with
 * words added (`setup_commands` for `setup`): too far apart to be a typo, but plainly meant.
 * Only when exactly one known key fits.
 */
function sameFirstWords(wanted: string, known: readonly string[]): string | undefined {
  const fits = known.filter((candidate) => {
    const k = candidate.toLowerCase();
    return k.startsWith(`${wanted}_`) || wanted.startsWith(`${k}_`);
  });
  return fits.length === 1 ? fits[0] : undefined;
}

/** Levenshtein distance, with a swap of two neighbours counted as one edit. */
function editDistance(a: string, b: string): number {
  // Long keys are never near a known one; this also bounds the work.
  if (Math.abs(a.length - b.length) > 8 || a.length > 64) return Infinity;
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      }
      row.push(d);
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}
