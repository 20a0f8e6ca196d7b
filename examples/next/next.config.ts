import type { NextConfig } from 'next';

// As `create-next-app --cache-components` writes it (Next 16): Cache Components and Partial
// Prefetching on, the strict mode, in which request data is read inside <Suspense> only and the
// clock after a request-time API only. The pages work with both off too.
const nextConfig: NextConfig = { cacheComponents: true, partialPrefetching: true };

export default nextConfig;
