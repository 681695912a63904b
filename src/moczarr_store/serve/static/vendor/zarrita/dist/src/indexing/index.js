export { get as getWithSetter } from "./get.js";
export { get, set } from "./ops.js";
export { set as setWithSetter } from "./set.js";
export { slice, sliceIndices as _sliceIndices } from "./util.js";
//# sourceMappingURL=index.js.map