import type { Metadata } from 'next';
import type { ReactNode } from 'react';

export const metadata: Metadata = { title: 'Auth.js with Tessera' };

const style = `
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; padding: 1rem; color: #111; background: #fff; }
main { max-width: 28rem; margin: 0 auto; }
dt { font-weight: 600; }
dd { margin: 0 0 .75rem; overflow-wrap: anywhere; }
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
