// The SQLite store's notes table: small per-key facts that outlive runs (the status comment id
// of an issue), and the cross-process lock of a key, kept as a note with a lease.
import type Database from 'better-sqlite3';

// The note holding a key's cross-process lock: `<token> <lease end, ms since epoch>`.
const LOCK_NOTE = 'exclusive-lock';

export class SqliteNotes {
  constructor(readonly db: Database.Database) {}

  getNote(key: string, name: string): string | undefined {
    const row = this.db
      .prepare(`SELECT value FROM notes WHERE key = ? AND name = ?`)
      .get(key, name) as { value: string } | undefined;
    return row?.value;
  }

  setNote(key: string, name: string, value: string | undefined): void {
    if (value === undefined) {
      this.db.prepare(`DELETE FROM notes WHERE key = ? AND name = ?`).run(key, name);
    } else {
      this.db
        .prepare(
          `INSERT INTO notes (key, name, value) VALUES (?, ?, ?) ON CONFLICT (key, name) DO UPDATE SET value = excluded.value`,
        )
        .run(key, name, value);
    }
  }

  /**
   * Takes the lock `key` for `token` when it is free or its holder's lease has run out (a
   * process that died holding it); true when taken. One IMMEDIATE transaction: every process on
   * this file agrees on who holds it.
   */
  tryLock(key: string, token: string, leaseMs: number): boolean {
    return this.db
      .transaction(() => {
        const now = Date.now();
        const [holder, until] = (this.getNote(key, LOCK_NOTE) ?? '').split(' ');
        if (holder && holder !== token && Number(until) > now) return false;
        this.setNote(key, LOCK_NOTE, `${token} ${now + leaseMs}`);
        return true;
      })
      .immediate();
  }

  /** Extends the lease of `token`'s lock; false (and left as it is) when it is no longer ours. */
  renewLock(key: string, token: string, leaseMs: number): boolean {
    return this.db
      .transaction(() => {
        const [holder] = (this.getNote(key, LOCK_NOTE) ?? '').split(' ');
        if (holder !== token) return false;
        this.setNote(key, LOCK_NOTE, `${token} ${Date.now() + leaseMs}`);
        return true;
      })
      .immediate();
  }

  /** Gives the lock back, when `token` still holds it. */
  unlock(key: string, token: string): void {
    this.db
      .transaction(() => {
        const [holder] = (this.getNote(key, LOCK_NOTE) ?? '').split(' ');
        if (holder === token) this.setNote(key, LOCK_NOTE, undefined);
      })
      .immediate();
  }
}
