// Host file errors as Python raises them: the OSError subclass for the errno, with glibc's
// strerror text and the path as Python's repr shows it.
import { constants as osConstants } from 'node:os';
import { PythonError } from '../leaf/sandbox.js';
import { pyRepr } from '../leaf/python-text.js';

export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

// glibc's strerror() for the errors file operations produce.
const STRERROR: Record<string, string> = {
  EPERM: 'Operation not permitted',
  ENOENT: 'No such file or directory',
  EIO: 'Input/output error',
  ENXIO: 'No such device or address',
  EBADF: 'Bad file descriptor',
  EAGAIN: 'Resource temporarily unavailable',
  ENOMEM: 'Cannot allocate memory',
  EACCES: 'Permission denied',
  EBUSY: 'Device or resource busy',
  EEXIST: 'File exists',
  EXDEV: 'Invalid cross-device link',
  ENODEV: 'No such device',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EINVAL: 'Invalid argument',
  ENFILE: 'Too many open files in system',
  EMFILE: 'Too many open files',
  ETXTBSY: 'Text file busy',
  EFBIG: 'File too large',
  ENOSPC: 'No space left on device',
  ESPIPE: 'Illegal seek',
  EROFS: 'Read-only file system',
  EMLINK: 'Too many links',
  ENAMETOOLONG: 'File name too long',
  ENOTEMPTY: 'Directory not empty',
  ELOOP: 'Too many levels of symbolic links',
  EDQUOT: 'Disk quota exceeded',
  EOVERFLOW: 'Value too large for defined data type',
};

// Python raises these OSError subclasses for these errno values (PEP 3151).
const OS_ERROR_TYPES: Record<string, string> = {
  EAGAIN: 'BlockingIOError',
  EALREADY: 'BlockingIOError',
  EINPROGRESS: 'BlockingIOError',
  ECHILD: 'ChildProcessError',
  EPIPE: 'BrokenPipeError',
  ESHUTDOWN: 'BrokenPipeError',
  ECONNABORTED: 'ConnectionAbortedError',
  ECONNREFUSED: 'ConnectionRefusedError',
  ECONNRESET: 'ConnectionResetError',
  EEXIST: 'FileExistsError',
  ENOENT: 'FileNotFoundError',
  EISDIR: 'IsADirectoryError',
  ENOTDIR: 'NotADirectoryError',
  EINTR: 'InterruptedError',
  EACCES: 'PermissionError',
  EPERM: 'PermissionError',
  ESRCH: 'ProcessLookupError',
  ETIMEDOUT: 'TimeoutError',
};

/** The OSError Python raises for a failed call on `path`: `[Errno N] strerror: 'path'`. */
export function pythonOSError(error: unknown, path: string): PythonError {
  const code = errorCode(error);
  const errno = code ? (osConstants.errno as Record<string, number | undefined>)[code] : undefined;
  if (code === undefined || errno === undefined) {
    return new PythonError('OSError', error instanceof Error ? error.message : String(error));
  }
  const text = STRERROR[code] ?? code;
  return new PythonError(
    OS_ERROR_TYPES[code] ?? 'OSError',
    `[Errno ${errno}] ${text}: ${pyRepr(path)}`,
  );
}
