import { _, type Ajv, type CodeKeywordDefinition, str } from 'ajv';

/** `maxLength` and `minLength` on a string's `length` (see codeUnitLengths). */
const lengthInCodeUnits: CodeKeywordDefinition = {
  keyword: ['maxLength', 'minLength'],
  type: 'string',
  schemaType: 'number',
  $data: true,
  error: {
    message: ({ keyword, schemaCode }) =>
      str`must NOT have ${keyword === 'maxLength' ? 'more' : 'fewer'} than ${schemaCode} characters`,
    params: ({ schemaCode }) => _`{limit: ${schemaCode}}`,
  },
  code(cxt) {
    const { keyword, data, schemaCode } = cxt;
    cxt.fail$data(
      keyword === 'maxLength' ? _`${data}.length > ${schemaCode}` : _`${data}.length < ${schemaCode}`,
    );
  },
};

/**
 * An Ajv plugin (Fastify's `ajv.plugins`): `maxLength` and `minLength` count a string's UTF-16
 * code units, its JavaScript `length`, instead of its code points.
 *
 * Ajv counts code points by walking every character of the string, on every validation: about
 * 0.6 µs for the access token of each `POST /verify` body (docs/BENCHMARKS.md, "Design
 * measurements"), a thirtieth of the route's whole cost for a token seen before. `length` is read
 * in constant time. A string has at least as many code units as code points, so no string longer
 * than a bound passes it that did not before; one with characters beyond the Basic Multilingual
 * Plane (most emoji) reaches a `maxLength` sooner. Every `minLength` of the API is 1, which both
 * counts agree on. The bounds in the code (a token's 8,192 characters, say) count code units too.
 * The messages stay Ajv's own.
 */
export function codeUnitLengths(ajv: Ajv): Ajv {
  ajv.removeKeyword('maxLength');
  ajv.removeKeyword('minLength');
  ajv.addKeyword(lengthInCodeUnits);
  return ajv;
}
