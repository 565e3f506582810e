// The REST budget counts what reaches GitHub, retries included, on the App's production client
// (retry and throttling plugins on, rate limits retried as GitHub asks).
import nock from 'nock';
import { describe, expect, it } from 'vitest';
import { RestBudget } from '../../src/github/rest-budget.js';
import { API, retryingTestOctokit } from './helpers/github.js';
import { useStrictNock } from './helpers/strict-nock.js';

useStrictNock();

describe('RestBudget.attach', () => {
  it('counts a request the retry plugin sent again after a 502', async () => {
    nock(API)
      .get('/repos/o/r')
      .reply(502, { message: 'Bad Gateway' })
      .get('/repos/o/r')
      .reply(200, { id: 1 });
    const budget = new RestBudget();
    const octokit = budget.attach(retryingTestOctokit());
    await octokit.rest.repos.get({ owner: 'o', repo: 'r' });
    expect(budget.spent).toBe(2);
  });

  it('counts a request retried after a secondary rate limit, and waits as GitHub asks', async () => {
    nock(API)
      .post('/repos/o/r/pulls')
      .reply(
        403,
        { message: 'You have exceeded a secondary rate limit. Please wait a few minutes.' },
        { 'retry-after': '1' },
      )
      .post('/repos/o/r/pulls')
      .reply(201, { number: 3, html_url: 'https://github.com/o/r/pull/3' });
    const budget = new RestBudget();
    const octokit = budget.attach(retryingTestOctokit());
    const started = Date.now();
    const { data } = await octokit.rest.pulls.create({
      owner: 'o',
      repo: 'r',
      head: 'frognano/issue-1',
      base: 'main',
      title: 't',
    });
    expect(data.number).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(budget.spent).toBe(2);
  });

  it('waits for the reset of an exhausted primary rate limit, then sends the request again', async () => {
    const reset = Math.ceil(Date.now() / 1000); // the retry waits until one second after it
    nock(API)
      .post('/repos/o/r/issues/1/comments')
      .reply(
        403,
        { message: 'API rate limit exceeded for installation ID 1.' },
        { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
      )
      .post('/repos/o/r/issues/1/comments')
      .reply(201, { id: 9 });
    const budget = new RestBudget();
    const octokit = budget.attach(retryingTestOctokit());
    const { data } = await octokit.rest.issues.createComment({
      owner: 'o',
      repo: 'r',
      issue_number: 1,
      body: 'x',
    });
    expect(data.id).toBe(9);
    expect(budget.spent).toBe(2);
  });

  it('gives up on a secondary rate limit that persists after the bounded retries', async () => {
    nock(API)
      .post('/repos/o/r/pulls')
      .times(4)
      .reply(403, { message: 'You have exceeded a secondary rate limit.' }, { 'retry-after': '1' });
    const budget = new RestBudget();
    const octokit = budget.attach(retryingTestOctokit());
    await expect(
      octokit.rest.pulls.create({ owner: 'o', repo: 'r', head: 'h', base: 'main', title: 't' }),
    ).rejects.toMatchObject({ status: 403 });
    expect(budget.spent).toBe(4);
  }, 10_000);
});
