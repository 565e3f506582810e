import { describe, expect, it } from 'vitest';
import type { PendingPublish } from '../../../src/github/publishing/pending-publish.js';
import { PublishError } from '../../../src/github/publishing/publish.js';
import { renderStatus } from '../../../src/github/status/status-comment.js';
import { publishFailure } from '../../../src/github/publishing/publish-run.js';

describe('publishFailure', () => {
  it("keeps git's output (file names the model chose) in a code block: no pings, links or markup", () => {
    const error = new PublishError(
      'applying the patch failed: error: patch failed: @maintainer/![x](https://evil.example/p.png) fixes #1:1\n' +
        'error: @maintainer/x.py: patch does not apply ghp_abcdefghijklmnopqrstuvwxyz0123456789',
    );
    const text = renderStatus(publishFailure(error));
    const fenced = /\n(`{3,})\n[\s\S]*?\n\1/.exec(text);
    expect(fenced?.[0]).toContain('@maintainer/x.py: patch does not apply');
    const outside = text.replace(fenced?.[0] ?? '', '');
    expect(outside).not.toContain('@maintainer');
    expect(outside).not.toContain('evil.example');
    expect(outside).toContain('pushing the branch or opening the draft pull request failed');
    expect(text).not.toContain('ghp_abcdefghijklmnopqrstuvwxyz0123456789');
  });

  it('says a plain retry publishes the kept change only when the change was kept', () => {
    const error = Object.assign(new Error('You have exceeded a secondary rate limit.'), {
      status: 403,
    });
    const kept = renderStatus(publishFailure(error, {} as PendingPublish));
    expect(kept).toContain(
      'The change is kept: comment `/frognano retry` with nothing after it to publish it without running the model again.',
    );
    expect(renderStatus(publishFailure(error))).not.toContain('The change is kept');
  });
});
