import { routeHandlers } from '@tessera/ssr/next';
import { tessera } from '@/lib/tessera';

// POST /auth/otp/start, /auth/otp/complete, /auth/logout, … and GET /auth/session.
export const { GET, POST } = routeHandlers(tessera);
