import { send } from './http-errors.ts';
import { chatCompletions } from './openai-chat.ts';
import { completions } from './openai-completions.ts';
import type { Route, SamplingContext } from './route.ts';

/**
 * The OpenAI/vLLM API: `GET /v1/models`, `POST /v1/completions` (openai-completions.ts) and, with a
 * chat template, `POST /v1/chat/completions` (openai-chat.ts). `/v1/models` lists the base, then
 * each loaded LoRA adapter as vLLM does: its name, its lora_path as `root`, the base as `parent`.
 */
export function openaiRoutes(
  ctx: SamplingContext & { startedAt: number; listAdapters?: () => { name: string; path: string }[] },
): Record<string, Route> {
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
            ...(ctx.listAdapters?.() ?? []).map((a) => ({
              id: a.name,
              object: 'model',
              created: ctx.startedAt,
              owned_by: 'crl',
              root: a.path,
              parent: model,
              max_model_len: null,
            })),
          ],
        }),
    },
    'POST /v1/completions': {
      post: true,
      handle: async (res, body) => {
        const answer = await completions(body, {
          model,
          ...(ctx.adapters ? { adapters: ctx.adapters } : {}),
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
                ...(ctx.adapters ? { adapters: ctx.adapters } : {}),
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
