// Holds the JS SDK's wire types to api/openapi.yaml, the one source of the interface: the
// webhook event type union to the WebhookEventType enum, each type's data (WebhookEventDataMap)
// to the data schema WebhookEvent names for it, field by field (names, required-ness, JSON
// type), and the uploader's part types and Visibility to their schemas.
// The types are read with the TypeScript compiler from the SDK's source, as a user's editor
// reads them; the Go SDK's are held to the same schemas by api/sdk_types_test.go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import yaml from 'js-yaml';

const here = dirname(fileURLToPath(import.meta.url));
const doc = yaml.load(readFileSync(join(here, '..', '..', '..', 'api', 'openapi.yaml'), 'utf8'));
// The webhook types are the npm package's (sdk/js), which the gateway's webhook module is built from.
const source = join(here, '..', '..', '..', 'sdk', 'js', 'src', 'webhook.ts');
const browser = join(here, '..', 'src', 'index.ts');

const program = ts.createProgram([source, browser], { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, types: ['node'] });
const checker = program.getTypeChecker();
const file = program.getSourceFile(source);
const exportsOf = (f) => new Map(checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(f)))
  .map((s) => [s.name, s]));
const exported = exportsOf(source);
const browserExported = exportsOf(browser);

function declared(name, from = exported) {
  const sym = from.get(name);
  assert.ok(sym, `the SDK exports ${name}`);
  return checker.getDeclaredTypeOfSymbol(sym);
}

// resolve follows a local $ref to the schema it names.
function resolve(schema) {
  while (schema && schema.$ref) {
    schema = schema.$ref.replace(/^#\//, '').split('/').reduce((node, key) => node[key], doc);
  }
  return schema;
}

// jsonTypes are the JSON types a schema allows (its own, its $ref's, or its allOf parts').
function jsonTypes(schema) {
  const s = resolve(schema);
  if (s.type === undefined) return (s.allOf ?? []).flatMap(jsonTypes);
  return Array.isArray(s.type) ? s.type : [s.type];
}

// tsJSON is the JSON type a TypeScript member type stands for.
function tsJSON(type) {
  if (type.flags & ts.TypeFlags.StringLike) return 'string';
  if (type.flags & ts.TypeFlags.NumberLike) return 'number';
  if (type.flags & ts.TypeFlags.BooleanLike) return 'boolean';
  if (checker.isArrayType(type)) return 'array';
  if (type.flags & ts.TypeFlags.Object) return 'object';
  return checker.typeToString(type);
}

// members lists an object type's properties: name -> {optional, json}.
function members(type) {
  const out = new Map();
  for (const p of checker.getPropertiesOfType(type)) {
    const optional = (p.flags & ts.SymbolFlags.Optional) !== 0;
    let type = checker.getTypeOfSymbolAtLocation(p, file);
    if (optional) type = checker.getNonNullableType(type); // an optional member's undefined is its absence
    out.set(p.name, { optional, json: tsJSON(type) });
  }
  return out;
}

// compare holds a TypeScript object type to an object schema; it returns the mismatches.
function compare(type, schema, where) {
  const s = resolve(schema);
  const got = members(type);
  const problems = [];
  const props = s.properties ?? {};
  for (const [name, m] of got) {
    if (!(name in props)) { problems.push(`${where}.${name}: not in the schema`); continue; }
    if (m.optional === (s.required ?? []).includes(name)) problems.push(`${where}.${name}: optional is ${m.optional}, required is ${!m.optional}`);
    const allowed = jsonTypes(props[name]);
    const ok = allowed.includes(m.json) || (m.json === 'number' && allowed.includes('integer'));
    if (!ok) problems.push(`${where}.${name}: TypeScript ${m.json}, schema ${allowed.join('|')}`);
  }
  for (const name of Object.keys(props)) {
    if (!got.has(name)) problems.push(`${where}.${name}: documented, but the SDK type has no such member`);
  }
  return problems;
}

test('WebhookEventType is the documented enum', () => {
  const union = declared('WebhookEventType');
  const values = (union.types ?? [union]).map((t) => t.value).sort();
  assert.deepEqual(values, [...doc.components.schemas.WebhookEventType.enum].sort());
});

test("every event type's data matches the schema WebhookEvent names for it", () => {
  const dataMap = declared('WebhookEventDataMap');
  const byType = new Map();
  for (const rule of doc.components.schemas.WebhookEvent.allOf) {
    for (const t of rule.if.properties.type.enum) byType.set(t, rule.then.properties.data);
  }
  const mapped = checker.getPropertiesOfType(dataMap).map((p) => p.name).sort();
  assert.deepEqual(mapped, [...byType.keys()].sort(), 'WebhookEventDataMap has every documented type');
  const problems = [];
  for (const p of checker.getPropertiesOfType(dataMap)) {
    problems.push(...compare(checker.getTypeOfSymbolAtLocation(p, file), byType.get(p.name), p.name));
  }
  assert.deepEqual(problems, []);
});

test('WebhookEvent has the envelope members the document requires', () => {
  const event = declared('WebhookEvent');
  const schema = doc.components.schemas.WebhookEvent;
  for (const member of event.types ?? [event]) {
    const got = [...members(member).keys()].sort();
    assert.deepEqual(got, Object.keys(schema.properties).sort());
    assert.deepEqual(got.filter((n) => !members(member).get(n).optional), [...schema.required].sort());
  }
});

test("the uploader's part types and Visibility match their schemas", () => {
  const schemas = doc.components.schemas;
  const problems = [
    ...compare(declared('SignedPart', browserExported), schemas.MultipartPartUrl, 'SignedPart'),
    ...compare(declared('StoredPart', browserExported), schemas.MultipartUploadStatus.properties.parts.items, 'StoredPart'),
  ];
  assert.deepEqual(problems, []);
  const vis = declared('Visibility', browserExported);
  assert.deepEqual((vis.types ?? [vis]).map((t) => t.value).sort(), [...schemas.Visibility.enum].sort());
});
