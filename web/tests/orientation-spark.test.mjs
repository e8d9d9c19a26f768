// The .splat and .ksplat scans (Spark) upright: see orientation-common.mjs.
import { orientationTests } from './orientation-common.mjs';

orientationTests(['splat', 'ksplat']);
