// Child process: the baseline, a bare Fastify 5 app with one JSON route answering {success:true}.
import Fastify from 'fastify';
import { answerCpuQueries, type ReadyMessage } from './protocol.js';

const app = Fastify({ logger: false });
app.post('/verify', async () => ({ success: true }));
await app.listen({ host: '127.0.0.1', port: 0 });

const address = app.server.address();
if (!address || typeof address === 'string') throw new Error('bare server has no TCP address');

const stop = () => {
  const force = setTimeout(() => process.exit(1), 3000);
  force.unref();
  app.close().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.once('disconnect', stop);

answerCpuQueries();
const ready: ReadyMessage = { type: 'ready', url: `http://127.0.0.1:${address.port}` };
process.send?.(ready);
