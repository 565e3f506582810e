// Follow-up triggers decided from real webhook payloads (@octokit/webhooks-examples), no I/O.
import { describe, expect, it } from 'vitest';
import { parseReviewCommand } from '../../../src/github/intake/review-triggers.js';
import { decideTrigger } from '../../../src/github/intake/triggers.js';
import {
  commentPayload,
  pullCommentPayload,
  reviewCommentPayload,
  reviewPayload,
} from '../helpers/payloads.js';

const options = { label: 'frognano' };
const maintainer = { login: 'Codertocat', id: 21031067 };

describe('parseReviewCommand', () => {
  it('reads /frognano with or without feedback, and exactly /frognano cancel', () => {
    expect(parseReviewCommand('/frognano')).toEqual({ verb: 'feedback', text: '' });
    expect(parseReviewCommand('/frognano  use a loop\nand test it\r\n')).toEqual({
      verb: 'feedback',
      text: 'use a loop\nand test it',
    });
    expect(parseReviewCommand('/FrogNano cancel')).toEqual({ verb: 'cancel' });
    expect(parseReviewCommand('/frognano cancel the loop')).toEqual({
      verb: 'feedback',
      text: 'cancel the loop',
    });
    for (const not of ['/frognanox', 'please /frognano fix', '> /frognano quoted', '']) {
      expect(parseReviewCommand(not), not).toBeUndefined();
    }
  });
});

describe('decideTrigger on pull requests', () => {
  it('a submitted review (commented or changes requested) starting with /frognano is a follow-up', () => {
    for (const state of ['commented', 'changes_requested'] as const) {
      const d = decideTrigger(
        'pull_request_review',
        reviewPayload({
          sender: maintainer,
          state,
          body: '/frognano tidy up',
          at: '2026-01-01T00:00:00Z',
        }),
        options,
      );
      expect(d).toMatchObject({
        kind: 'run',
        source: 'review',
        issueNumber: 7,
        pullRequest: true,
        review: { trigger: 'review', feedback: 'tidy up', at: '2026-01-01T00:00:00Z' },
        sender: maintainer,
      });
      expect(d).not.toHaveProperty('commentId', expect.anything());
    }
  });

  it('ignores approvals, other actions, reviews without the command and bots', () => {
    const ignored = [
      reviewPayload({ sender: maintainer, state: 'approved' }),
      reviewPayload({ sender: maintainer, action: 'dismissed' }),
      reviewPayload({ sender: maintainer, body: 'looks good' }),
      reviewPayload({ sender: { login: 'other[bot]', id: 1, type: 'Bot' } }),
    ];
    for (const p of ignored)
      expect(decideTrigger('pull_request_review', p, options).kind).toBe('ignore');
  });

  it('an inline review comment starting with /frognano is a follow-up; edits are ignored', () => {
    const d = decideTrigger(
      'pull_request_review_comment',
      reviewCommentPayload({ sender: maintainer, body: '/frognano rename x', commentId: 77 }),
      options,
    );
    expect(d).toMatchObject({
      kind: 'run',
      source: 'review',
      commentId: 77,
      commentKind: 'review_comment',
      review: { trigger: 'review_comment', feedback: 'rename x' },
    });
    const edited = reviewCommentPayload({ sender: maintainer, action: 'edited' });
    expect(decideTrigger('pull_request_review_comment', edited, options).kind).toBe('ignore');
  });

  it('/frognano use K (a bad K too) in a review body or an inline comment is use, not feedback', () => {
    const review = decideTrigger(
      'pull_request_review',
      reviewPayload({ sender: maintainer, body: '/frognano use 2' }),
      options,
    );
    expect(review).toMatchObject({ kind: 'use', attempt: 2, issueNumber: 7, sender: maintainer });
    expect(review).not.toHaveProperty('commentId', expect.anything());
    for (const body of ['/frognano use 9', '/frognano use 1e3', '/frognano use 1 2']) {
      const inline = decideTrigger(
        'pull_request_review_comment',
        reviewCommentPayload({ sender: maintainer, body, commentId: 77 }),
        options,
      );
      expect(inline, body).toMatchObject({
        kind: 'use',
        issueNumber: 7,
        commentId: 77,
        commentKind: 'review_comment',
      });
    }
    expect(
      decideTrigger(
        'pull_request_review',
        reviewPayload({ sender: maintainer, body: '/frognano use 0' }),
        options,
      ),
    ).toMatchObject({ kind: 'use', attempt: 0 });
    // Words after `use` stay feedback.
    expect(
      decideTrigger(
        'pull_request_review',
        reviewPayload({ sender: maintainer, body: '/frognano use a loop' }),
        options,
      ),
    ).toMatchObject({ kind: 'run', review: { feedback: 'use a loop' } });
  });

  it('/frognano ci in a PR comment, a review body or an inline comment is ci, not feedback', () => {
    expect(
      decideTrigger(
        'issue_comment',
        pullCommentPayload({ sender: maintainer, body: '/frognano ci' }),
        options,
      ),
    ).toMatchObject({ kind: 'ci', issueNumber: 7, commentId: 4242, pullRequest: true });
    expect(
      decideTrigger(
        'pull_request_review',
        reviewPayload({ sender: maintainer, body: '/frognano CI' }),
        options,
      ),
    ).toMatchObject({ kind: 'ci', issueNumber: 7, sender: maintainer });
    expect(
      decideTrigger(
        'pull_request_review_comment',
        reviewCommentPayload({ sender: maintainer, body: '/frognano ci', commentId: 77 }),
        options,
      ),
    ).toMatchObject({ kind: 'ci', commentId: 77, commentKind: 'review_comment' });
    // Anything after `ci` is feedback for a follow-up, as any other words are.
    expect(
      decideTrigger(
        'issue_comment',
        pullCommentPayload({ sender: maintainer, body: '/frognano ci please' }),
        options,
      ),
    ).toMatchObject({ kind: 'run', review: { feedback: 'ci please' } });
  });

  it('a PR comment is a follow-up or a cancel; an issue comment stays an issue command', () => {
    expect(
      decideTrigger(
        'issue_comment',
        pullCommentPayload({ sender: maintainer, body: '/frognano more tests' }),
        options,
      ),
    ).toMatchObject({
      kind: 'run',
      source: 'review',
      commentId: 4242,
      commentKind: 'issue',
      review: { trigger: 'comment', feedback: 'more tests' },
    });
    expect(
      decideTrigger(
        'issue_comment',
        pullCommentPayload({ sender: maintainer, body: '/frognano cancel' }),
        options,
      ),
    ).toMatchObject({ kind: 'cancel', issueNumber: 7, pullRequest: true });
    expect(
      decideTrigger(
        'issue_comment',
        commentPayload({ sender: maintainer, body: '/frognano retry' }),
        options,
      ),
    ).toMatchObject({ kind: 'run', source: 'retry' });
    expect(
      decideTrigger(
        'issue_comment',
        commentPayload({ sender: maintainer, body: '/frognano fix' }),
        options,
      ).kind,
    ).toBe('ignore');
  });
});
