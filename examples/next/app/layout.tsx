import type { Metadata } from 'next';
import type { ReactNode } from 'react';

export const metadata: Metadata = { title: 'Tessera Next.js example' };

const style = `
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; padding: 1rem; color: #111; background: #fff; }
main { max-width: 28rem; margin: 0 auto; }
label { display: block; margin: 0 0 .75rem; }
input { display: block; box-sizing: border-box; width: 100%; margin-top: .25rem; padding: .5rem; font: inherit; }
button { padding: .5rem 1rem; font: inherit; }
a { color: #0645ad; }
[role="alert"] { color: #a00000; }
`;

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <head>
        <style>{style}</style>
      </head>
      <body>
        <main>{children}</main>
      </body>
    </html>
  );
}
