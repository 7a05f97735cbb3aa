import { statSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, resolve, sep } from 'node:path';
import { ConfigError, ToolInputError } from '../../core/errors.ts';
import { checkOptionObject, isPlainObject } from '../../core/options.ts';
import { zod } from '../../core/zod.ts';
import { type Tool, tool } from '../tool.ts';
import { chunkMarkdown } from './markdown-chunks.ts';
import { cosineSimilarity, reciprocalRankFusion } from './rank-fusion.ts';
import { assertSearchLibraryInstalled, loadSearchLibrary } from './search-library.ts';

/** A document given directly to documentSearch. */
export interface SearchDocument {
  /** Unique; results cite it as their `source`. */
  id: string;
  /** Markdown or plain text. */
  text: string;
  /** Shown with each result; defaults to the document's first heading, or its id. */
  title?: string | undefined;
}

/** Turns texts into vectors (one per text, all of one length), e.g. an embedding model's API. */
export type EmbedFunction = (texts: string[]) => number[][] | Promise<number[][]>;

export interface DocumentSearchOptions {
  /** The documents to search. Give this or `dir`. */
  documents?: readonly SearchDocument[] | undefined;
  /**
   * A folder whose Markdown and text files (.md, .markdown, .mdx, .txt, in subfolders too, not in hidden folders or
   * node_modules) are searched; each result cites the file's path relative to the folder. Read on the first search.
   */
  dir?: string | undefined;
  /** Results per search. Default 5. */
  topK?: number | undefined;
  /**
   * Adds semantic search: the chunks are embedded once (on the first search, in batches of 64) and each query once;
   * the keyword (BM25) ranking and the cosine ranking are merged by reciprocal rank fusion.
   */
  embed?: EmbedFunction | undefined;
  /** The tool's name. Default `search_documents`. */
  name?: string | undefined;
  /** What the model reads about the documents (appended to the tool's description), e.g. "the product manual". */
  about?: string | undefined;
  /** Longest chunk, in characters; chunks never cross a heading. Default 1200. */
  chunkChars?: number | undefined;
}

/** One result: the chunk's text and everything needed to cite it. */
export interface DocumentSearchHit {
  /** The document's id, or the file's path relative to `dir`. */
  source: string;
  title: string;
  /** The headings above the chunk, `Install > Linux`; empty before a document's first heading. */
  heading: string;
  /** Index of the chunk within its document, from 0. */
  chunk: number;
  /** Character offsets of the chunk in the document: `text.slice(start, end)`. */
  start: number;
  end: number;
  /** `source#chunk (start-end) heading`, ready to quote as a citation. */
  citation: string;
  score: number;
  text: string;
}

export interface DocumentSearchResult {
  query: string;
  results: DocumentSearchHit[];
}

interface IndexedChunk {
  id: number;
  source: string;
  title: string;
  heading: string;
  chunk: number;
  start: number;
  end: number;
  text: string;
}

interface SearchIndex {
  chunks: IndexedChunk[];
  search(query: string): { id: number; score: number }[];
  vectors: number[][] | undefined;
}

const documentExtensions: ReadonlySet<string> = new Set(['.md', '.markdown', '.mdx', '.txt']);
const maxFileBytes = 5 * 1024 * 1024;
const maxFiles = 10_000;
const embedBatch = 64;
/** How deep in the keyword ranking hybrid search looks before fusing. */
const keywordDepth = 50;

/** Words too common to help a keyword search find anything. */
const stopWords: ReadonlySet<string> = new Set(
  'a an and are as at be but by can do does for from how i if in into is it its me my of on or so that the their then there these this to was what when where which who why will with you your'.split(
    ' ',
  ),
);

const documentSearchOptionKeys: readonly string[] = [
  'documents',
  'dir',
  'topK',
  'embed',
  'name',
  'about',
  'chunkChars',
];

/**
 * A tool that searches the user's documents locally: Markdown and text, given as `documents` or read from `dir`,
 * cut into chunks that keep their heading path, ranked by BM25+ (MiniSearch, an optional peer dependency:
 * `npm install minisearch`), or, with `embed`, by BM25 and embeddings fused. Each of the `topK` results carries its
 * source, chunk index, character offsets and heading, so an answer can cite it.
 */
export function documentSearch(
  options: DocumentSearchOptions,
): Tool<{ query: string }, DocumentSearchResult> {
  checkOptionObject(options as unknown, documentSearchOptionKeys, 'documentSearch(): options');
  const where = 'documentSearch()';
  if ((options.documents === undefined) === (options.dir === undefined))
    throw new ConfigError(`${where}: give either documents or dir (not both).`);
  const documents = options.documents === undefined ? undefined : checkDocuments(options.documents, where);
  let dir: string | undefined;
  if (options.dir !== undefined) {
    if (typeof options.dir !== 'string' || options.dir === '')
      throw new ConfigError(`${where}: dir must be the path of a folder.`);
    dir = resolve(options.dir);
    let isDirectory = false;
    try {
      isDirectory = statSync(dir).isDirectory();
    } catch {
      isDirectory = false;
    }
    if (!isDirectory)
      throw new ConfigError(`${where}: dir ${JSON.stringify(options.dir)} is not an existing folder.`);
  }
  const topK = positiveInteger(options.topK, 5, 'topK', where);
  const chunkChars = positiveInteger(options.chunkChars, 1200, 'chunkChars', where);
  if (chunkChars < 100) throw new ConfigError(`${where}: chunkChars must be at least 100.`);
  const embed = options.embed;
  if (embed !== undefined && typeof embed !== 'function')
    throw new ConfigError(`${where}: embed must be a function from texts to vectors.`);
  if (options.about !== undefined && typeof options.about !== 'string')
    throw new ConfigError(`${where}: about must be a string.`);
  assertSearchLibraryInstalled(where);

  let building: Promise<SearchIndex> | undefined;
  const index = (): Promise<SearchIndex> => {
    if (building === undefined) {
      building = buildIndex(documents ?? [], dir, chunkChars, embed, where).catch((error: unknown) => {
        building = undefined;
        throw error;
      });
    }
    return building;
  };

  const z = zod();
  const input = z.object({
    query: z.string().describe('What to look for, in words likely to appear in the text.'),
  });
  return tool<typeof input, DocumentSearchResult>({
    name: options.name ?? 'search_documents',
    description: `Searches ${options.about ?? "the user's documents"} and returns the ${topK} most relevant passages, each with a citation (source, chunk, character offsets, heading). Quote the citation of each passage your answer relies on.`,
    input,
    execute: async ({ query }) => {
      if (query.trim() === '') throw new ToolInputError('The query is empty; say what to look for.');
      if (query.length > 2000)
        throw new ToolInputError('The query is longer than 2000 characters; shorten it.');
      const built = await index();
      const ranked = await rank(built, query, topK, embed);
      return {
        query,
        results: ranked.map(({ id, score }) => {
          const chunk = built.chunks[id] as IndexedChunk;
          return {
            source: chunk.source,
            title: chunk.title,
            heading: chunk.heading,
            chunk: chunk.chunk,
            start: chunk.start,
            end: chunk.end,
            citation: `${chunk.source}#${chunk.chunk} (${chunk.start}-${chunk.end})${chunk.heading === '' ? '' : ` ${chunk.heading}`}`,
            score: Math.round(score * 10_000) / 10_000,
            text: chunk.text,
          };
        }),
      };
    },
  });
}

async function rank(
  built: SearchIndex,
  query: string,
  topK: number,
  embed: EmbedFunction | undefined,
): Promise<{ id: number; score: number }[]> {
  const keyword = built.search(query);
  if (embed === undefined || built.vectors === undefined) return keyword.slice(0, topK);
  const [queryVector] = await embedAll(embed, [query], 1);
  const vectors = built.vectors;
  const semantic = vectors
    .map((vector, id) => ({ id, score: cosineSimilarity(queryVector as number[], vector) }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, keywordDepth);
  const fused = reciprocalRankFusion([
    keyword.slice(0, keywordDepth).map((hit) => hit.id),
    semantic.map((hit) => hit.id),
  ]);
  return [...fused.entries()]
    .map(([id, score]) => ({ id, score }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, topK);
}

async function buildIndex(
  given: readonly SearchDocument[],
  dir: string | undefined,
  chunkChars: number,
  embed: EmbedFunction | undefined,
  where: string,
): Promise<SearchIndex> {
  const { default: MiniSearch } = await loadSearchLibrary(where);
  const documents = dir === undefined ? given : await readFolder(dir);
  const chunks: IndexedChunk[] = [];
  for (const document of documents) {
    const pieces = chunkMarkdown(document.text, chunkChars);
    const title =
      document.title ?? pieces.find((piece) => piece.headings.length > 0)?.headings[0] ?? document.id;
    pieces.forEach((piece, chunk) => {
      chunks.push({
        id: chunks.length,
        source: document.id,
        title,
        heading: piece.headings.join(' > '),
        chunk,
        start: piece.start,
        end: piece.end,
        text: document.text.slice(piece.start, piece.end),
      });
    });
  }
  const processTerm = (term: string): string | null => {
    const lower = term.toLowerCase();
    return stopWords.has(lower) ? null : lower;
  };
  const miniSearch = new MiniSearch<IndexedChunk>({
    fields: ['text', 'heading', 'title'],
    processTerm,
  });
  miniSearch.addAll(chunks);
  const search = (query: string): { id: number; score: number }[] =>
    miniSearch
      .search(query, {
        boost: { heading: 2, title: 1.5 },
        prefix: (term) => term.length >= 4,
        fuzzy: (term) => (term.length >= 6 ? 0.15 : false),
        combineWith: 'OR',
      })
      .map((hit) => ({ id: hit.id as number, score: hit.score }));
  let vectors: number[][] | undefined;
  if (embed !== undefined && chunks.length > 0) {
    vectors = await embedAll(
      embed,
      chunks.map((chunk) => (chunk.heading === '' ? chunk.text : `${chunk.heading}\n${chunk.text}`)),
      embedBatch,
    );
  }
  return { chunks, search, vectors };
}

/** Embeds in batches and checks the answer: one vector per text, all of one length, finite numbers. */
async function embedAll(embed: EmbedFunction, texts: string[], batch: number): Promise<number[][]> {
  const vectors: number[][] = [];
  for (let from = 0; from < texts.length; from += batch) {
    const slice = texts.slice(from, from + batch);
    const answer: unknown = await embed(slice);
    if (!Array.isArray(answer) || answer.length !== slice.length)
      throw new Error(
        `documentSearch(): embed returned ${Array.isArray(answer) ? answer.length : typeof answer} vectors for ${slice.length} texts.`,
      );
    for (const vector of answer) {
      if (
        !Array.isArray(vector) ||
        vector.some((value) => typeof value !== 'number' || !Number.isFinite(value))
      )
        throw new Error('documentSearch(): embed must return arrays of finite numbers.');
      if (vectors.length > 0 && vector.length !== vectors[0]?.length)
        throw new Error('documentSearch(): embed returned vectors of different lengths.');
      vectors.push(vector as number[]);
    }
  }
  return vectors;
}

async function readFolder(dir: string): Promise<SearchDocument[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const paths = entries
    .filter((entry) => entry.isFile() && documentExtensions.has(extname(entry.name).toLowerCase()))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter(
      (path) =>
        !relative(dir, path)
          .split(sep)
          .some((part) => part.startsWith('.') || part === 'node_modules'),
    )
    .sort();
  if (paths.length > maxFiles)
    throw new Error(
      `documentSearch(): ${dir} holds ${paths.length} documents; at most ${maxFiles} are searched.`,
    );
  const documents: SearchDocument[] = [];
  for (const path of paths) {
    const bytes = await readFile(path);
    if (bytes.length > maxFileBytes) continue;
    documents.push({ id: relative(dir, path).split(sep).join('/'), text: bytes.toString('utf8') });
  }
  return documents;
}

function checkDocuments(documents: unknown, where: string): SearchDocument[] {
  if (!Array.isArray(documents))
    throw new ConfigError(`${where}: documents must be an array of { id, text, title? }.`);
  const seen = new Set<string>();
  return documents.map((document: unknown, index) => {
    if (!isPlainObject(document))
      throw new ConfigError(`${where}: documents[${index}] must be an object { id, text, title? }.`);
    const { id, text, title } = document;
    if (typeof id !== 'string' || id === '')
      throw new ConfigError(`${where}: documents[${index}].id must be a non-empty string.`);
    if (seen.has(id)) throw new ConfigError(`${where}: two documents have the id ${JSON.stringify(id)}.`);
    seen.add(id);
    if (typeof text !== 'string')
      throw new ConfigError(`${where}: documents[${index}].text must be a string.`);
    if (title !== undefined && typeof title !== 'string')
      throw new ConfigError(`${where}: documents[${index}].title must be a string.`);
    return { id, text, title };
  });
}

function positiveInteger(value: unknown, fallback: number, name: string, where: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
    throw new ConfigError(`${where}: ${name} must be a positive integer.`);
  return value;
}
