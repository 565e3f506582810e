import { describe, expect, it } from 'vitest';
import { PublishError } from '../../src/github/publish.js';
import { renderStatus } from '../../src/github/status-comment.js';
import { publishFailure } from '../../src/github/worker.js';

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
});
