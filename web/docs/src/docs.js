// Renders the gateway's own /openapi.yaml with Redoc. A separate file rather than an inline
// script, so the page's Content-Security-Policy can allow scripts from its own origin only.
const root = document.getElementById('redoc');
window.Redoc.init(root.dataset.specUrl, {
  expandResponses: '200,201,202',
  jsonSampleExpandLevel: 3,
  hideHostname: true,
  sortPropsAlphabetically: false,
  requiredPropsFirst: true,
}, root);
