// `/frognano …` commands and who is a bot: shared by the issue and the review triggers.

export function isBot(user: { login: string; type?: string | undefined }): boolean {
  return user.type === 'Bot' || /\[bot\]$/i.test(user.login);
}

export type Command =
  | { verb: 'retry'; guidance?: string; attempts?: number }
  | { verb: 'cancel' }
  | { verb: 'use'; attempt: number | undefined }
  | { verb: 'ci' };

/**
 * A command is the whole comment: its first line is `/frognano retry [xN] [guidance]`, exactly
 * `/frognano cancel`, exactly `/frognano ci`, or `/frognano use K` (on the bot's pull request). Retry guidance may continue on the following lines; `xN` (N from
 * 1 to 8, right after `retry`) asks for N parallel attempts. A command quoted in a reply, buried in prose or glued to other words
 * (`/frognano retrying`) is not a command.
 *
 * `use` with nothing after it, or with anything starting like a number (`use 9`, `use -1`,
 * `use 1e3`, `use 1 2`) is `use`: a bad K is answered with the valid range, never read as
 * feedback for a follow-up run. `use` followed by words (`use the project's style`) is not a
 * command here: on a pull request it is feedback.
 */
export function parseCommand(body: string): Command | undefined {
  const text = body.replace(/\r\n?/g, '\n').trim();
  const m = /^\/frognano[ \t]+(retry|cancel|use|ci)(?=$|[ \t\n])([\s\S]*)$/i.exec(text);
  if (!m) return undefined;
  const verb = (m[1] ?? '').toLowerCase();
  const rest = (m[2] ?? '').trim();
  if (verb === 'cancel') return rest === '' ? { verb: 'cancel' } : undefined;
  if (verb === 'ci') return rest === '' ? { verb: 'ci' } : undefined;
  if (verb === 'use') {
    if (rest !== '' && !/^[-+]?[.\d]/.test(rest)) return undefined;
    return { verb: 'use', attempt: /^[-+]?\d+$/.test(rest) ? Number(rest) : undefined };
  }
  const count = /^[x×]([1-8])(?=$|[ \t\n])([\s\S]*)$/i.exec(rest);
  const attempts = count ? { attempts: Number(count[1]) } : {};
  const guidance = (count ? (count[2] ?? '') : rest).trim();
  return guidance === ''
    ? { verb: 'retry', ...attempts }
    : { verb: 'retry', guidance, ...attempts };
}
