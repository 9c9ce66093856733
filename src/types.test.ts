import queryTypes from './schema/v0alpha1/query.types.json';
import settings from './schema/v0alpha1/settings.json';
import {
  DIAGNOSIS_FORMATS,
  OPTIMISATIONS,
  QUERY_DEFAULTS,
  QUERY_TYPES,
  SETTINGS_DEFAULTS,
  SEVERITIES,
  TRACES_BACKENDS,
} from './types';

// types.gen.ts and the schema are both written from pkg/plugin by `go generate ./pkg/plugin`
// (pkg/plugin/contract's Go test fails while either is stale): the front end reads the same
// contract the schema publishes.
type Property = { enum?: string[]; default?: unknown; items?: { enum?: string[] } };
type Definition = { metadata: { name: string }; spec: { schema: { properties: Record<string, Property> } } };

const definitions = queryTypes.items as unknown as Definition[];
const propertiesOf = (name: string) => definitions.find((d) => d.metadata.name === name)?.spec.schema.properties ?? {};
const jsonData = settings.spec.properties.jsonData.properties as Record<string, Property>;

describe('the generated types agree with the schema', () => {
  it('has its query types, in order, and the text form beside them', () => {
    expect([...QUERY_TYPES, 'text']).toEqual(definitions.map((d) => d.metadata.name));
  });

  it.each([
    ['diagnosis formats', DIAGNOSIS_FORMATS, propertiesOf('diagnosis').format.enum],
    ['severities', SEVERITIES, propertiesOf('diagnosis').severities.items?.enum],
    ['optimisations', OPTIMISATIONS, propertiesOf('verdict').optimisations.items?.enum],
    ['trace backends', TRACES_BACKENDS, jsonData.tracesBackend.enum],
  ])('has its %s', (_name, generated, schema) => {
    expect(generated).toEqual(schema);
  });

  it.each(QUERY_TYPES)("has the %s query's defaults", (name) => {
    const schema = Object.entries(propertiesOf(name)).filter(([, p]) => p.default !== undefined);
    expect(QUERY_DEFAULTS[name]).toEqual(Object.fromEntries(schema.map(([key, p]) => [key, p.default])));
  });

  it("has the settings' defaults", () => {
    const schema = Object.entries(jsonData).filter(([, p]) => p.default !== undefined);
    expect(SETTINGS_DEFAULTS).toEqual(Object.fromEntries(schema.map(([key, p]) => [key, p.default])));
  });
});
