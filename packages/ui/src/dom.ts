type Child = Node | string | false | null | undefined;
type Attrs = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

/**
 * Creates an element: `on…` members become listeners, `true` an empty attribute, and `false`,
 * `null` and `undefined` are left out. Text children are text nodes (never parsed as HTML).
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value != null) element.setAttribute(name, String(value));
  }
  for (const child of children) if (child) element.append(child);
  return element;
}

/** A button (`type=button` unless given), with its part names. */
export const button = (label: string, part: string, onclick?: () => void, attrs: Attrs = {}) =>
  h('button', { type: 'button', part: `button ${part}`, class: part, onclick, ...attrs }, label);

/** A label and its control, in a field. */
export function field(id: string, label: string, control: HTMLElement, hint?: string): HTMLElement {
  control.id = id;
  if (hint) control.setAttribute('aria-describedby', `${id}-hint`);
  return h(
    'div',
    { part: 'field', class: 'field' },
    h('label', { for: id, part: 'label' }, label),
    hint ? h('p', { id: `${id}-hint`, part: 'hint', class: 'hint' }, hint) : null,
    control,
  );
}
