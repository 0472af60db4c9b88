/** A parsed chat turn, as a text-level policy sees it. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'observation';
  content: string;
}
