// An example warden tool in JavaScript: counts the words of a text.
import { tools } from './warden_tool.js';

export const tool = tools([
  {
    name: 'word_count',
    description:
      'Count the words of a text (split on whitespace); with unique, count distinct words.',
    schema: {
      type: 'object',
      properties: {
        text: { type: 'string', description: 'The text to count.' },
        unique: { type: 'boolean', description: 'Count each distinct word once.' },
      },
      required: ['text'],
      additionalProperties: false,
    },
    run({ text, unique = false }) {
      const words = text.split(/\s+/).filter((w) => w.length > 0);
      if (words.length === 0) {
        throw new Error('the text has no words; give some text to count');
      }
      const n = unique ? new Set(words).size : words.length;
      return `${n} words`;
    },
  },
]);
