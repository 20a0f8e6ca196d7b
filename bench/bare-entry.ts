// Child process: the baseline, a bare Fastify 5 app with one JSON route answering {success:true}.
import Fastify from 'fastify';
import { serveBaseline } from './baseline.js';

const app = Fastify({ logger: false });
app.post('/verify', async () => ({ success: true }));
await serveBaseline(app);
