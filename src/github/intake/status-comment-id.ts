import type { Notes } from '../../queue/types.js';
import { STATUS_COMMENT_NOTE } from '../status/index.js';

/** The id of the status comment, as the queue's note shares it with the workers. */
export async function statusCommentId(
  queue: Pick<Notes, 'getNote'>,
  key: string,
): Promise<number | undefined> {
  const note = await queue.getNote(key, STATUS_COMMENT_NOTE);
  return note ? Number(note) : undefined;
}
