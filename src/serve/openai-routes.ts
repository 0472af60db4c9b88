import { send } from './http-errors.ts';
import { chatCompletions } from './openai-chat.ts';
import { completions } from './openai-completions.ts';
import type { Route, SamplingContext } from './route.ts';

/**
 * The OpenAI/vLLM API: `GET /v1/models`, `POST /v1/completions` (openai-completions.ts) and, with a
 * chat template, `POST /v1/chat/completions` (openai-chat.ts).
 */
export function openaiRoutes(ctx: SamplingContext & { startedAt: number }): Record<string, Route> {
  const { model } = ctx;
  return {
    'GET /v1/models': {
      post: false,
      handle: (res) =>
        send(res, 200, {
          object: 'list',
          data: [
            {
              id: model,
              object: 'model',
              created: ctx.startedAt,
              owned_by: 'crl',
              root: model,
              parent: null,
              max_model_len: ctx.maxModelLen,
            },
          ],
        }),
    },
    'POST /v1/completions': {
      post: true,
      handle: async (res, body) => {
        const answer = await completions(body, {
          model,
          tokenizer: ctx.tokenizer,
          vocabSize: ctx.vocabSize,
          maxModelLen: ctx.maxModelLen,
          sample: ctx.sample,
          ...(ctx.score ? { score: ctx.score } : {}),
        });
        if ('json' in answer) return send(res, 200, answer.json);
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        for (const e of answer.events) res.write(e);
        res.end();
      },
    },
    ...(ctx.chat
      ? {
          'POST /v1/chat/completions': {
            post: true,
            handle: async (res, body) => {
              const answer = await chatCompletions(body, {
                model,
                chat: ctx.chat!,
                vocabSize: ctx.vocabSize,
                maxModelLen: ctx.maxModelLen,
                sample: ctx.sample,
              });
              if ('json' in answer) return send(res, 200, answer.json);
              res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
              for (const e of answer.events) res.write(e);
              res.end();
            },
          } satisfies Route,
        }
      : {}),
  };
}
