// warden_tool.js: turn JavaScript functions into a warden tool component.
//
//   import { tools, InvalidArgs } from './warden_tool.js';
//   export const tool = tools([
//     { name: 'word_count', description: '...', schema: { type: 'object', ... },
//       aliases: ['wc'], mutates: false, run: ({ text }) => `${text.length}` },
//   ]);
//
// The component exports `tool` (the `warden:tool/tool` interface). The host
// validates every call against `schema` before `run` gets the parsed
// arguments. `run` returns the text the model reads (anything else is sent as
// JSON). Throw InvalidArgs, NotFound, Denied or Failed for a typed error; any
// other thrown value becomes a `failed` error carrying its message, and its
// stack goes to stderr (the call's stderr record).

class ToolError extends Error {
  constructor(message) {
    super(message);
    this.name = this.constructor.name;
  }
}

/** Arguments that passed the schema but are still wrong. */
export class InvalidArgs extends ToolError {
  get kind() { return 'invalid-args'; }
}
/** A file or other object named in the call does not exist. */
export class NotFound extends ToolError {
  get kind() { return 'not-found'; }
}
/** The sandbox refused the operation. */
export class Denied extends ToolError {
  get kind() { return 'denied'; }
}
/** Anything else that went wrong. */
export class Failed extends ToolError {
  get kind() { return 'failed'; }
}

/** The `tool` export of a component offering `list`. */
export function tools(list) {
  const find = (name) =>
    list.find((t) => t.name === name || (t.aliases || []).includes(name));
  return {
    describe() {
      return list.map((t) => ({
        name: t.name,
        description: t.description,
        parameters: JSON.stringify(t.schema),
        aliases: t.aliases || [],
        mutates: Boolean(t.mutates),
        // Not declared: a call that may change files is shown to the user
        // as "effects unknown" and cannot be undone.
        effects: undefined,
      }));
    },
    call(name, args) {
      const t = find(name);
      if (!t) {
        const names = list.map((x) => x.name).join(', ');
        throw { tag: 'not-found', val: `unknown tool ${JSON.stringify(name)}; this component offers: ${names}` };
      }
      let result;
      try {
        result = t.run(JSON.parse(args));
      } catch (e) {
        if (e instanceof ToolError) {
          throw { tag: e.kind, val: e.message };
        }
        const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
        console.error(e instanceof Error && e.stack ? `${message}\n${e.stack}` : message);
        throw { tag: 'failed', val: message };
      }
      return typeof result === 'string' ? result : JSON.stringify(result);
    },
  };
}
