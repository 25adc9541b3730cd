// Types of /console/vendor/uPlot.esm.js (served from node_modules/uplot/dist) for the console's type check.
export { default } from "uplot";
