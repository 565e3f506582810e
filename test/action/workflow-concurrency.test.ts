// The documented workflow's (docs/actions.md) concurrency group, evaluated as GitHub evaluates its cancel test (string
// comparisons ignore case), against what the bot reads in the same text: only a real cancel may
// leave the or pull request's group, or two runs of it could go at once; and a cancel
// in any of the places the bot takes one from must leave it, or it waits behind the run it stops.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../src/github/intake/parse-command.js';
import { parseReviewCommand } from '../../src/github/intake/review-triggers.js';

const readme = readFileSync('docs/actions.md', 'utf8');
const section = readme.slice(readme.indexOf('## Run it as a GitHub Actions workflow'));
const workflow = parse(/```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '') as {
  jobs: Record<string, { concurrency: { group: string } }>;
};
const group = Object.values(workflow.jobs)[0]!.concurrency.group;

type Event = Record<string, Record<string, string>>;

/** The group's `<test> && 'cancel' || 'run'`, where the test is `||` of `==` or `startsWith`. */
function inCancelGroup(event: Event): boolean {
  const test = /\$\{\{ ([^}]*?) && 'cancel' \|\| 'run' \}\}/.exec(group)?.[1];
  if (!test) throw new Error(`no cancel test in ${group}`);
  const value = (ref: string) => {
    const [, , object, field] = ref.split('.');
    return (event[object!]?.[field!] ?? '').toLowerCase();
  };
  const terms = /^\((.*)\)$/.exec(test)?.[1] ?? test;
  return terms.split(' || ').some((term) => {
    const eq = /^(github\.event\.\w+\.body) == '([^']*)'$/.exec(term);
    if (eq) return value(eq[1]!) === eq[2]!.toLowerCase();
    const starts = /^startsWith\((github\.event\.\w+\.body), '([^']*)'\)$/.exec(term);
    if (starts) return value(starts[1]!).startsWith(starts[2]!.toLowerCase());
    throw new Error(`a term this test cannot read: ${term}`);
  });
}

describe("the README workflow's cancel group", () => {
  it.each([
    ['an issue comment', { comment: { body: '/frognano cancel' } }],
    ['a pull request comment', { comment: { body: '/frognano Cancel' } }],
    ['an inline comment', { comment: { body: '/frognano cancel' } }],
    ['a review', { review: { body: '/frognano cancel' } }],
  ])('takes a cancel in %s out of the run group', (_, event: Event) => {
    const body = event.comment?.body ?? event.review?.body ?? '';
    expect(parseReviewCommand(body)).toEqual({ verb: 'cancel' });
    expect(inCancelGroup(event)).toBe(true);
  });

  it.each([
    '/frognano cancel the rename, keep the rest',
    '/frognano cancellation should not raise',
    '/frognano retry',
    'please /frognano cancel',
  ])('keeps %j, which is not a cancel, in the run group', (body) => {
    expect(parseCommand(body)?.verb).not.toBe('cancel');
    expect(parseReviewCommand(body)?.verb).not.toBe('cancel');
    for (const event of [{ comment: { body } }, { review: { body } }] as Event[]) {
      expect(inCancelGroup(event), JSON.stringify(event)).toBe(false);
    }
  });
});
