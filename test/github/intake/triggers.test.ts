import { describe, expect, it } from 'vitest';
import { decideTrigger, issueKey, parseCommand } from '../../../src/github/intake/triggers.js';
import { commentPayload, labeledPayload } from '../helpers/payloads.js';

const opts = { label: 'frognano' };

describe('parseCommand', () => {
  it.each([
    ['/frognano retry', { verb: 'retry' }],
    ['  /frognano   retry  ', { verb: 'retry' }],
    ['/frognano RETRY', { verb: 'retry' }],
    ['/frognano retry use the stdlib only', { verb: 'retry', guidance: 'use the stdlib only' }],
    ['/frognano retry\nline one\nline two', { verb: 'retry', guidance: 'line one\nline two' }],
    ['/frognano cancel', { verb: 'cancel' }],
    ['/frognano cancel\r\n', { verb: 'cancel' }],
    ['/frognano retry x4', { verb: 'retry', attempts: 4 }],
    [
      '/frognano retry X2 use the stdlib',
      { verb: 'retry', attempts: 2, guidance: 'use the stdlib' },
    ],
    ['/frognano retry ×3\nmore', { verb: 'retry', attempts: 3, guidance: 'more' }],
    // Not a count: stays guidance.
    ['/frognano retry x9 please', { verb: 'retry', guidance: 'x9 please' }],
    ['/frognano retry x4please', { verb: 'retry', guidance: 'x4please' }],
    ['/frognano retry fix x4 too', { verb: 'retry', guidance: 'fix x4 too' }],
    ['/frognano use 2', { verb: 'use', attempt: 2 }],
    ['/frognano USE 8\n', { verb: 'use', attempt: 8 }],
    // A bad K is still `use` (refused later with the valid range), never feedback.
    ['/frognano use 9', { verb: 'use', attempt: 9 }],
    ['/frognano use 0', { verb: 'use', attempt: 0 }],
    ['/frognano use -1', { verb: 'use', attempt: -1 }],
    ['/frognano use 1e3', { verb: 'use' }],
    ['/frognano use 1 2', { verb: 'use' }],
    ['/frognano use 2 please', { verb: 'use' }],
    ['/frognano use', { verb: 'use' }],
    ['/frognano ci', { verb: 'ci' }],
    ['  /frognano CI \r\n', { verb: 'ci' }],
  ])('parses %j', (body, expected) => {
    expect(parseCommand(body)).toEqual(expected);
  });

  it.each([
    'please /frognano retry',
    '> /frognano retry',
    '/frognano retrying',
    '/frognanoretry',
    '/frognano',
    '/frognano cancel now please',
    '/frognano status',
    'frognano retry',
    '`/frognano retry`',
    // Words after `use` are feedback on a pull request ("use the project's style").
    '/frognano use two',
    '/frognano used 2',
    // `ci` is the whole comment: anything after it is not the command.
    '/frognano ci please',
    '/frognano cial',
    '> /frognano ci',
  ])('does not treat %j as a command', (body) => {
    expect(parseCommand(body)).toBeUndefined();
  });
});

describe('decideTrigger: /frognano ci', () => {
  it('on an issue is never read as a retry', () => {
    const d = decideTrigger('issue_comment', commentPayload({ body: '/frognano ci' }), opts);
    expect(d).toMatchObject({ kind: 'ignore' });
  });
});

describe('decideTrigger: /frognano use K', () => {
  it('is a use decision on a pull request, with the comment to react to', () => {
    const d = decideTrigger(
      'issue_comment',
      commentPayload({ body: '/frognano use 3', pullRequest: true }),
      opts,
    );
    expect(d).toMatchObject({ kind: 'use', attempt: 3, commentId: 4242 });
  });

  it.each([
    '/frognano use 0',
    '/frognano use 9',
    '/frognano use -1',
    '/frognano use 1e3',
    '/frognano use 1 2',
  ])('reads %j on a pull request as use, not as a follow-up with feedback', (body) => {
    const d = decideTrigger('issue_comment', commentPayload({ body, pullRequest: true }), opts);
    expect(d).toMatchObject({ kind: 'use', commentId: 4242 });
    expect(d).not.toHaveProperty('review');
  });

  it('is ignored on an issue, and from a bot', () => {
    expect(
      decideTrigger('issue_comment', commentPayload({ body: '/frognano use 3' }), opts),
    ).toMatchObject({ kind: 'ignore' });
    expect(
      decideTrigger(
        'issue_comment',
        commentPayload({
          body: '/frognano use 3',
          pullRequest: true,
          commenter: { login: 'x[bot]', id: 1, type: 'Bot' },
        }),
        opts,
      ),
    ).toMatchObject({ kind: 'ignore', reason: 'comment by a bot' });
  });
});

describe('decideTrigger', () => {
  it('starts a run on the configured label (case-insensitive)', () => {
    const d = decideTrigger('issues', labeledPayload({ label: 'FrogNano' }), opts);
    expect(d).toMatchObject({
      kind: 'run',
      source: 'label',
      owner: 'Codertocat',
      repo: 'Hello-World',
      issueNumber: 1,
      installationId: 1,
      sender: { login: 'Codertocat' },
    });
    expect(d).not.toHaveProperty('commentId', expect.anything());
  });

  it('ignores other labels and other issue actions', () => {
    expect(decideTrigger('issues', labeledPayload({ label: 'bug' }), opts).kind).toBe('ignore');
    expect(decideTrigger('issues', labeledPayload({ action: 'unlabeled' }), opts).kind).toBe(
      'ignore',
    );
  });

  it('turns /frognano retry and cancel comments into runs and cancels', () => {
    const retry = decideTrigger(
      'issue_comment',
      commentPayload({ body: '/frognano retry be brief' }),
      opts,
    );
    expect(retry).toMatchObject({
      kind: 'run',
      source: 'retry',
      guidance: 'be brief',
      commentId: 4242,
    });
    const cancel = decideTrigger(
      'issue_comment',
      commentPayload({ body: '/frognano cancel' }),
      opts,
    );
    expect(cancel).toMatchObject({ kind: 'cancel', commentId: 4242 });
  });

  it('ignores edited comments, ordinary comments and non-commands on pull requests', () => {
    expect(decideTrigger('issue_comment', commentPayload({ action: 'edited' }), opts).kind).toBe(
      'ignore',
    );
    expect(decideTrigger('issue_comment', commentPayload({ body: 'LGTM' }), opts).kind).toBe(
      'ignore',
    );
    // `/frognano …` on a pull request is a follow-up (review-triggers.test.ts).
    expect(
      decideTrigger('issue_comment', commentPayload({ pullRequest: true, body: 'LGTM' }), opts)
        .kind,
    ).toBe('ignore');
    expect(decideTrigger('issues', labeledPayload({ pullRequest: true }), opts).kind).toBe(
      'ignore',
    );
  });

  it('ignores bots, ourselves included', () => {
    const bot = { login: 'frognano[bot]', id: 9, type: 'Bot' };
    expect(decideTrigger('issues', labeledPayload({ sender: bot }), opts)).toMatchObject({
      kind: 'ignore',
      reason: 'sender is a bot',
    });
    expect(
      decideTrigger('issue_comment', commentPayload({ sender: bot, commenter: bot }), opts).kind,
    ).toBe('ignore');
    // A bot login without the Bot type (e.g. from an older GHES) is still a bot.
    const sneaky = { login: 'other[bot]', id: 10, type: 'User' };
    expect(decideTrigger('issues', labeledPayload({ sender: sneaky }), opts).kind).toBe('ignore');
  });

  it('refuses closed and locked issues for runs but still allows cancelling', () => {
    expect(decideTrigger('issues', labeledPayload({ state: 'closed' }), opts)).toMatchObject({
      kind: 'refuse',
      reason: 'closed',
    });
    expect(decideTrigger('issue_comment', commentPayload({ locked: true }), opts)).toMatchObject({
      kind: 'refuse',
      reason: 'locked',
    });
    expect(
      decideTrigger(
        'issue_comment',
        commentPayload({ state: 'closed', body: '/frognano cancel' }),
        opts,
      ).kind,
    ).toBe('cancel');
  });

  it('ignores payloads without an installation and unrelated events', () => {
    expect(decideTrigger('issues', labeledPayload({ installationId: null }), opts).kind).toBe(
      'ignore',
    );
    expect(decideTrigger('push', {}, opts).kind).toBe('ignore');
    expect(decideTrigger('issues', { action: 'labeled' }, opts).kind).toBe('ignore');
  });

  it('keys issues case-insensitively', () => {
    expect(issueKey({ owner: 'Codertocat', repo: 'Hello-World', issueNumber: 3 })).toBe(
      'codertocat/hello-world#3',
    );
  });
});
