import type { NextConfig } from 'next';

// Cache Components on (create-next-app 16 asks; `--cache-components`): the stricter mode, in which
// request data is read inside <Suspense> only. The pages work with it off too.
const nextConfig: NextConfig = { cacheComponents: true };

export default nextConfig;
