// levelData version 1 (contract item 11 and our orientation extension, docs/embeds.md): its
// types and a lenient reader shared by the viewer and the editor. The server validates every
// write; this reader still never trusts what it gets (a legacy scene's levelData predates the
// validation), so it drops what is malformed instead of failing the page.
import type { CameraState, Vec3 } from './orbit.ts';

export type { CameraState, Vec3 };

/** The tone mapping curves the viewer offers (PlayCanvas's TONEMAP_LINEAR, _ACES, _NEUTRAL). */
export type ToneMapping = 'linear' | 'aces' | 'neutral';

/** Every ToneMapping, for controls that offer them. */
export const TONE_MAPPINGS: readonly ToneMapping[] = ['linear', 'aces', 'neutral'];

/** A hotspot: a titled note at a point of the scene, optionally with the view to show it from. */
export interface Annotation {
  /** 1-64 characters of [A-Za-z0-9_-], unique in the scene. */
  id: string;
  position: Vec3;
  /** 1-120 characters. */
  title: string;
  /** 0-2000 characters ('' when absent). */
  text: string;
  camera?: CameraState;
}

/**
 * levelData v1. Everything is optional; keys this version does not know are kept as they are
 * (the index signature), so an editor that reads, changes and writes back a LevelV1 loses none
 * of them.
 */
export interface LevelV1 {
  version: 1;
  /** The start camera, in the world frame the viewer renders (Y up, after orientation). */
  camera?: CameraState;
  /** At most 200, ids unique. */
  annotations?: Annotation[];
  /** The clear colour, '#rrggbb'. */
  background?: { color: string };
  /** exposure in stops (-10..10, 0 = as stored) and the tone mapping curve. */
  post?: { exposure?: number; toneMapping?: ToneMapping };
  /** Background audio; volume 0-1. */
  audio?: { url: string; loop?: boolean; volume?: number };
  /**
   * Our extension: Euler degrees applied to the scene's splats, X first, then Y, then Z, each
   * about the world's fixed axes (PlayCanvas's setEulerAngles convention, SuperSplat's too).
   * Absent means DEFAULT_ROTATION.
   */
  orientation?: { rotation: Vec3 };
  [key: string]: unknown;
}

/**
 * The orientation a scene gets when its levelData names none: 3DGS training tools leave scans
 * y-down (the COLMAP camera convention), and 180° about X turns them upright, as PlayCanvas's
 * and Spark's own examples do.
 */
export const DEFAULT_ROTATION: [number, number, number] = [180, 0, 0];

/** The most annotations a scene keeps (the server refuses more; readLevel keeps the first). */
export const MAX_ANNOTATIONS = 200;
const ANNOTATION_ID = /^[A-Za-z0-9_-]{1,64}$/;
const COLOR = /^#[0-9a-fA-F]{6}$/;

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isVec3 = (v: unknown): v is Vec3 => Array.isArray(v) && v.length === 3 && v.every(finite);
// Lengths are counted in code points, as the server counts runes.
const length = (s: string) => [...s].length;

/** A camera object, or undefined when it is malformed. */
export function readCamera(raw: unknown): CameraState | undefined {
  if (!isObject(raw) || !isVec3(raw.position) || !isVec3(raw.target)) return undefined;
  const cam = { ...raw, position: [...raw.position], target: [...raw.target] } as CameraState & Record<string, unknown>;
  if (!(finite(raw.fov) && raw.fov >= 1 && raw.fov <= 179)) delete cam.fov;
  return cam;
}

/** obj without the keys in drop: the malformed known fields (unknown keys stay, as the server
 * keeps them). */
function without<T extends Record<string, unknown>>(obj: T, ...drop: string[]): T {
  const out = { ...obj };
  for (const k of drop) delete out[k];
  return out;
}

function readAnnotation(raw: unknown): Annotation | undefined {
  if (!isObject(raw)) return undefined;
  const { id, position, title, text } = raw;
  if (typeof id !== 'string' || !ANNOTATION_ID.test(id) || !isVec3(position)) return undefined;
  if (typeof title !== 'string' || length(title) < 1 || length(title) > 120) return undefined;
  const a = without({ ...raw, id, position: [...position], title, text: typeof text === 'string' && length(text) <= 2000 ? text : '' }, 'camera') as Annotation;
  const camera = readCamera(raw.camera);
  if (camera) a.camera = camera;
  return a;
}

/**
 * Reads a scene's levelData as v1, leniently: a malformed part (a camera without a target, an
 * annotation without a title, a colour that is not #rrggbb, ...) is dropped, and anything else,
 * keys this version does not know included (at the top and inside the known objects), is kept.
 * Never throws; null, a legacy object without `version` or garbage give a LevelV1. Returns a
 * copy: changing it leaves raw as it was (nested unknown values are shared).
 */
export function readLevel(raw: unknown): LevelV1 {
  const src = isObject(raw) ? raw : {};
  const out: LevelV1 = { version: 1 };
  for (const [k, v] of Object.entries(src)) {
    if (!(k in KNOWN)) out[k] = v;
  }
  const camera = readCamera(src.camera);
  if (camera) out.camera = camera;
  if (Array.isArray(src.annotations)) {
    const seen = new Set<string>();
    const list: Annotation[] = [];
    for (const item of src.annotations) {
      const a = readAnnotation(item);
      if (!a || seen.has(a.id)) continue;
      seen.add(a.id);
      list.push(a);
      if (list.length === MAX_ANNOTATIONS) break;
    }
    out.annotations = list;
  }
  if (isObject(src.background) && typeof src.background.color === 'string' && COLOR.test(src.background.color)) {
    out.background = { ...src.background, color: src.background.color.toLowerCase() };
  }
  if (isObject(src.post)) {
    const { exposure, toneMapping } = src.post;
    out.post = without(src.post, ...[
      ...(finite(exposure) && exposure >= -10 && exposure <= 10 ? [] : ['exposure']),
      ...(typeof toneMapping === 'string' && (TONE_MAPPINGS as readonly string[]).includes(toneMapping) ? [] : ['toneMapping']),
    ]) as LevelV1['post'];
  }
  if (isObject(src.audio) && typeof src.audio.url === 'string' && src.audio.url) {
    const { loop, volume } = src.audio;
    out.audio = without(src.audio, ...[
      ...(typeof loop === 'boolean' ? [] : ['loop']),
      ...(finite(volume) && volume >= 0 && volume <= 1 ? [] : ['volume']),
    ]) as LevelV1['audio'];
  }
  if (isObject(src.orientation) && isVec3(src.orientation.rotation) && src.orientation.rotation.every((n) => n >= -360 && n <= 360)) {
    out.orientation = { ...src.orientation, rotation: [...src.orientation.rotation] };
  }
  return out;
}

// The keys readLevel reads itself (everything else is copied through).
const KNOWN: Record<string, true> = {
  version: true, camera: true, annotations: true, background: true, post: true, audio: true, orientation: true,
};

/** The scene's orientation: levelData's, or DEFAULT_ROTATION when it names none. */
export function rotationOf(level: LevelV1 | null | undefined): Vec3 {
  return level?.orientation ? [...level.orientation.rotation] : [...DEFAULT_ROTATION];
}
