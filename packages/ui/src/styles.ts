/** The dark palette: under `prefers-color-scheme: dark` unless `theme="light"`, and with `theme="dark"`. */
const DARK =
  '--_p:var(--tessera-color-primary,var(--tessera-brand-primary-dark,#9db8ff));' +
  '--_op:var(--tessera-color-on-primary,var(--tessera-brand-on-primary-dark,#0b1220));' +
  '--_bg:var(--tessera-color-background,#161b22);--_fg:var(--tessera-color-text,#e6edf3);' +
  '--_mu:var(--tessera-color-muted,#a5afbb);--_bd:var(--tessera-color-border,#8b949e);' +
  '--_er:var(--tessera-color-error,#ffa198);--_ok:var(--tessera-color-success,#7ee2a8);' +
  '--_fo:var(--tessera-color-focus,#9db8ff);color-scheme:dark';

/**
 * The theme every Tessera component shares (`<tessera-sign-in>`, `@tessera/react`'s
 * `<UserButton/>`): the `--tessera-*` custom properties (the page's own, then the project's
 * branding, then these defaults) as private `--_*` tokens on `:host`, light and dark, and the
 * controls built on them (labels, fields, buttons, focus ring, error and status lines). Logical
 * properties only, so right-to-left works.
 */
export const THEME = `
:host{--_p:var(--tessera-color-primary,var(--tessera-brand-primary,#1d4ed8));
--_op:var(--tessera-color-on-primary,var(--tessera-brand-on-primary,#fff));
--_bg:var(--tessera-color-background,#fff);--_fg:var(--tessera-color-text,#1f2328);
--_mu:var(--tessera-color-muted,#57606a);--_bd:var(--tessera-color-border,#6e7781);
--_er:var(--tessera-color-error,#b42318);--_ok:var(--tessera-color-success,#1a7f37);
--_fo:var(--tessera-color-focus,#1d4ed8);--_r:var(--tessera-radius,10px);--_s:var(--tessera-spacing,16px);
display:block;color-scheme:light;font:16px/1.5 var(--tessera-font-family,system-ui,-apple-system,"Segoe UI",Roboto,sans-serif)}
@media (prefers-color-scheme:dark){:host(:not([theme=light])){${DARK}}}
:host([theme=dark]){${DARK}}
:host([hidden]){display:none}
*{box-sizing:border-box}
p{margin:0 0 var(--_s)}
.hint,.text{color:var(--_mu)}
.hint{margin:0 0 6px;font-size:.875rem}
.field{margin-block-end:var(--_s)}
label{display:block;font-weight:600;margin-block-end:6px}
input,select{display:block;width:100%;min-height:44px;padding:8px 12px;font:inherit;color:var(--_fg);
background:var(--_bg);border:1px solid var(--_bd);border-radius:calc(var(--_r)*.6)}
input[aria-invalid=true]{border-color:var(--_er);border-width:2px}
button{display:block;width:100%;min-height:44px;margin-block-end:12px;padding:8px 16px;font:inherit;font-weight:600;
cursor:pointer;border-radius:calc(var(--_r)*.6);border:1px solid var(--_bd);background:transparent;color:var(--_fg)}
button:disabled{cursor:default;opacity:.75}
.primary{background:var(--_p);color:var(--_op);border-color:var(--_p)}
.link{width:auto;border:0;padding:8px 4px;margin-inline:auto;font-weight:400;text-decoration:underline;text-underline-offset:3px}
:focus-visible{outline:3px solid var(--_fo);outline-offset:2px}
.error{color:var(--_er);font-weight:600}
.error:empty,.status:empty{display:none}
.status{color:var(--_ok);font-weight:600}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.row{display:flex;gap:8px;flex-wrap:wrap}
.row button{flex:1 1 8rem;margin:0}
`;

/** The element's styles, in its shadow root: the shared {@link THEME}, then the sign-in's own; `::part()` reaches each piece. */
export const STYLES = `${THEME}
.card{max-width:26rem;margin-inline:auto;padding:calc(var(--_s)*1.5);background:var(--_bg);color:var(--_fg);
border:1px solid var(--_bd);border-radius:var(--_r)}
@media (max-width:400px){.card{padding:var(--_s)}}
@media (prefers-reduced-motion:no-preference){.step{animation:in .18s ease-out}}
@keyframes in{from{opacity:0;transform:translateY(4px)}}
header{display:flex;align-items:center;gap:12px;margin-block-end:var(--_s)}
header img{max-block-size:40px;max-inline-size:120px}
.name{font-weight:600}
h2{font-size:1.375rem;line-height:1.3;margin:0 0 8px}
h2:focus{outline:none}
#code{font-size:1.375rem;letter-spacing:.3em;text-align:center;font-variant-numeric:tabular-nums}
.or{display:flex;align-items:center;gap:12px;color:var(--_mu);margin-block:4px 16px}
.or::before,.or::after{content:"";flex:1;border-block-start:1px solid var(--_bd)}
.pad{display:grid;grid-template-columns:repeat(3,1fr);gap:8px;margin-block-end:var(--_s)}
.pad button{margin:0;min-height:52px;font-size:1.25rem}
.offer{border:1px solid var(--_bd);border-radius:calc(var(--_r)*.8);padding:var(--_s);margin-block-end:12px}
.offer h3{font-size:1.0625rem;margin:0 0 4px}
.offer p{margin-block-end:12px}
`;
