// One scripted GPU server of the endpoints bench, in a process of its own as a real one is:
// its answers slow down with the requests in flight along the H200 curve. It tells its
// parent its URL; asked, the requests it received per bench run; with KILL_AFTER set it
// kills itself with -9 when that many requests have arrived, those in flight unanswered.
import { startScriptedModelServer } from '../../test/support/scripted-model-server.js';
import { BASE_MS, answerTo, batchCost } from './curve-endpoint-script.js';

const RUN_MARK = /bench run (\d+)\)/;

export type CurveEndpointMessage = { baseUrl: string } | { perRun: Record<string, number> };

async function main(): Promise<void> {
  const send = (message: CurveEndpointMessage): void => void process.send!(message);
  const killAfter = Number(process.env.KILL_AFTER ?? 0);
  let arrivals = 0;
  const server = await startScriptedModelServer({
    onExhausted: (request) => {
      if (++arrivals === killAfter) setImmediate(() => process.kill(process.pid, 'SIGKILL'));
      return answerTo(request);
    },
    latency: (inFlight) => BASE_MS * batchCost(inFlight),
  });
  process.on('message', () => {
    const perRun: Record<string, number> = {};
    for (const request of server.chatRequests) {
      const n = RUN_MARK.exec(request.rawBody)?.[1] ?? 'unmarked';
      perRun[n] = (perRun[n] ?? 0) + 1;
    }
    send({ perRun });
  });
  process.on('disconnect', () => void server.close().then(() => process.exit(0)));
  send({ baseUrl: server.baseUrl });
}

void main();
