// Holds halves of a data directory until killed (the data-dir-lock test's other process).
import { lockDataDir, type DataDirHalf } from '../../src/queue/data-dir-lock.js';

const [dataDir, mode, ...halves] = process.argv.slice(2);
lockDataDir(dataDir as string, halves as DataDirHalf[], mode as string);
process.stdout.write('locked\n');
setInterval(() => undefined, 1 << 30);
