// Spark + three engine: the formats only Spark reads, .splat and .ksplat. Spark draws them as
// stored (no axis flip of its own): the stage's orientation turns the mesh.
import * as THREE from 'three';
import { SparkRenderer, SplatFileType, SplatMesh, dyno } from '@sparkjsdev/spark';
import { CLEAR_RGB, type Engine, type EngineHooks, type EngineLook, type Quat, type SceneSource } from './engine.ts';
import type { Bounds } from './orbit.ts';

const FILE_TYPES: Partial<Record<SceneSource['format'], SplatFileType>> = {
  splat: SplatFileType.SPLAT,
  ksplat: SplatFileType.KSPLAT,
  ply: SplatFileType.PLY,
};

// The tone curves of PlayCanvas's gsplat output (tonemappingLinearPS, AcesPS, NeutralPS), applied
// the way its gsplat shader applies them: per splat colour, from gamma to linear, times the
// exposure, the curve, and back to gamma. Spark has no tone mapping of its own, so both engines
// show a scene's post settings alike.
const TONE_GLSL = `
vec3 splathostTone(vec3 gammaColor, float exposure, int curve) {
  vec3 color = pow(max(gammaColor, vec3(0.0)), vec3(2.2)) * exposure;
  if (curve == 1) {
    color = (color * (2.51 * color + 0.03)) / (color * (2.43 * color + 0.59) + 0.14);
  } else if (curve == 2) {
    float startCompression = 0.8 - 0.04;
    float desaturation = 0.15;
    float x = min(color.r, min(color.g, color.b));
    float offset = x < 0.08 ? x - 6.25 * x * x : 0.04;
    color -= offset;
    float peak = max(color.r, max(color.g, color.b));
    if (peak >= startCompression) {
      float d = 1.0 - startCompression;
      float newPeak = 1.0 - d * d / (peak + d - startCompression);
      color *= newPeak / peak;
      float g = 1.0 - 1.0 / (desaturation * (peak - newPeak) + 1.0);
      color = mix(color, newPeak * vec3(1.0), g);
    }
  }
  return pow(color + 0.0000001, vec3(1.0 / 2.2));
}
`;
const CURVES: Record<EngineLook['toneMapping'], number> = { linear: 0, aces: 1, neutral: 2 };

/** Creates a three renderer with Spark on canvas and runs its frame loop. */
export function createSpark(canvas: HTMLCanvasElement, hooks: EngineHooks): Engine {
  // preserveDrawingBuffer lets the stage (and tests) read pixels between frames.
  const renderer = new THREE.WebGLRenderer({ canvas, antialias: false, alpha: false, preserveDrawingBuffer: true });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
  // The clear colour is given in sRGB, so the canvas shows exactly CLEAR_RGB.
  renderer.setClearColor(new THREE.Color().setRGB(CLEAR_RGB[0] / 255, CLEAR_RGB[1] / 255, CLEAR_RGB[2] / 255, THREE.SRGBColorSpace), 1);
  const scene = new THREE.Scene();
  const camera = new THREE.PerspectiveCamera(60, 1, 0.01, 1000);
  const spark = new SparkRenderer({ renderer });
  scene.add(spark);

  // The canvas's own CSS size (the page's CSS sizes it: the window in the viewer, the area left
  // of the panel in the editor), which the stage's project() uses too, so hotspots sit where the
  // splats are drawn; the drawing buffer follows it.
  const resize = () => {
    const w = canvas.clientWidth || window.innerWidth;
    const h = canvas.clientHeight || window.innerHeight;
    renderer.setSize(w, h, false);
    camera.aspect = w / Math.max(1, h);
  };
  resize();
  const resized = new ResizeObserver(resize);
  resized.observe(canvas);

  renderer.setAnimationLoop(() => {
    const c = hooks.camera();
    camera.position.set(...c.position);
    camera.lookAt(...c.target);
    camera.fov = c.fov ?? 60;
    const dist = camera.position.distanceTo(new THREE.Vector3(...c.target));
    camera.near = Math.max(1e-3, dist / 1000);
    camera.far = Math.max(100, dist * 100);
    camera.updateProjectionMatrix();
    renderer.render(scene, camera);
    hooks.frame();
    // Spark draws a file whole once its splats are in the renderer's set and a sort of that set
    // has been applied: reported the frame after a sort that started after the load ended and
    // left nothing newer to sort.
    if (loadedAt !== null && !spark.sorting && !spark.sortDirty && spark.lastSortTime > loadedAt && spark.current.numSplats > 0) {
      if (sortedFrames++ === 1) hooks.whole(true);
    }
  });

  // The look's uniforms, read by every mesh's world modifier (the last step of its splats).
  const exposure = dyno.dynoFloat(1);
  const curve = dyno.dynoInt(0);
  const toneModifier = dyno.dynoBlock({ gsplat: dyno.Gsplat }, { gsplat: dyno.Gsplat }, ({ gsplat }) => {
    const tone = new dyno.Dyno({
      inTypes: { gsplat: dyno.Gsplat, exposure: 'float', curve: 'int' },
      outTypes: { gsplat: dyno.Gsplat },
      inputs: { gsplat, exposure, curve },
      globals: () => [TONE_GLSL],
      statements: ({ inputs, outputs }) => [
        `${outputs.gsplat} = ${inputs.gsplat};`,
        `${outputs.gsplat}.rgba.rgb = splathostTone(${inputs.gsplat}.rgba.rgb, ${inputs.exposure}, ${inputs.curve});`,
      ],
    });
    return { gsplat: tone.outputs.gsplat };
  });

  let mesh: SplatMesh | null = null;
  // When the scene's splats were in (performance.now()), and frames drawn with a sort since.
  let loadedAt: number | null = null;
  let sortedFrames = 0;
  let rotation: Quat = [0, 0, 0, 1];
  return {
    setRotation(q: Quat) {
      rotation = q;
      mesh?.quaternion.set(q[0], q[1], q[2], q[3]);
    },
    setLook(look: EngineLook) {
      const bg = look.background;
      // Given in sRGB, so the canvas shows exactly that colour.
      renderer.setClearColor(new THREE.Color().setRGB(bg[0] / 255, bg[1] / 255, bg[2] / 255, THREE.SRGBColorSpace), 1);
      exposure.value = look.exposure;
      curve.value = CURVES[look.toneMapping];
      // The splats are regenerated when their generator's version changes.
      mesh?.updateVersion();
    },
    async load(src: SceneSource): Promise<Bounds> {
      // fileType is passed always: a stored URL or a picked file may not carry the extension.
      const fileType = FILE_TYPES[src.format];
      mesh = src.file
        ? new SplatMesh({ fileBytes: await src.file.arrayBuffer(), fileType, fileName: src.file.name })
        : new SplatMesh({ url: src.url!, fileType });
      mesh.quaternion.set(rotation[0], rotation[1], rotation[2], rotation[3]);
      mesh.worldModifier = toneModifier;
      mesh.updateGenerator();
      scene.add(mesh);
      await mesh.initialized;
      loadedAt = performance.now();
      const box = mesh.getBoundingBox(false);
      return { min: box.min.toArray(), max: box.max.toArray() };
    },
    destroy() {
      resized.disconnect();
      renderer.setAnimationLoop(null);
      mesh?.dispose();
      renderer.dispose();
      renderer.forceContextLoss();
    },
  };
}
