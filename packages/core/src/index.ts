export * from './errors.js';
export * from './tokens.js';
export * from './verify.js';
