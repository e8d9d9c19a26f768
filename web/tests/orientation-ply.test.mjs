// The .ply scans (PlayCanvas) upright: see orientation-common.mjs.
import { orientationTests } from './orientation-common.mjs';

orientationTests(['ply', 'compressed-ply']);
