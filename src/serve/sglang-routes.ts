import { ENGINE_PROTOCOLS } from '../adapters/engine-protocols.ts';
import { send } from './http-errors.ts';
import { HttpError } from './http-guard.ts';
import { adapterNamed, type Route, type SamplingContext } from './route.ts';

/**
 * SGLang's native `POST /generate`, with the schemas of engine-protocols.ts (the client's own). A
 * request's `lora_path` names a loaded LoRA adapter, as SGLang's does (404 when none is loaded
 * under that name, as a vLLM model name; the base's name answers with the base).
 */
export function sglangRoutes(ctx: SamplingContext): Record<string, Route> {
  const sglang = ENGINE_PROTOCOLS.sglang;
  return {
    [`POST ${sglang.path}`]: {
      post: true,
      handle: async (res, body) => {
        let parsed: ReturnType<NonNullable<typeof sglang.parseRequest>>;
        try {
          parsed = sglang.parseRequest!(body);
        } catch (e) {
          throw new HttpError(400, (e as Error).message);
        }
        const v = ctx.vocabSize;
        if ([...parsed.request.prompt, ...parsed.request.stopTokens].some((t) => t >= v))
          throw new HttpError(400, `token ids must be below the vocabulary size ${v}`);
        const adapter = adapterNamed(ctx, parsed.adapter);
        const [result] = await ctx.sample([parsed.request], parsed.params, adapter);
        // SGLang's `text` is the decoded output without the stop token that ended it.
        const stopped = result!.finishReason === 'stop' && parsed.request.stopTokens.includes(result!.tokens.at(-1)!);
        const text = ctx.tokenizer.decode(stopped ? result!.tokens.slice(0, -1) : result!.tokens);
        send(
          res,
          200,
          sglang.responseBody!({ result: result!, model: ctx.model, promptTokens: parsed.request.prompt.length, text }),
        );
      },
    },
  };
}
