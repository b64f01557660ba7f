// The Keras backend namespace: `import { backend as K } from 'theanine'`.
// Names are Keras' own, each written once here. A builder (a function that builds nodes) is
// exported traced (./trace.ts): its nodes record `K.<name>` and the user's line; those traced with
// `callbacks` take user functions, which run as user code. Configuration and inspection functions
// are exported as they are. Reserved words are exported under their Keras names all the same.
import './methods.js';
import { traced, tracedAll } from './trace.js';
import { unary } from './args.js';
import * as stateApi from './state.js';
import * as tensorsApi from './tensors.js';
import * as mathApi from './math.js';
import * as convApi from './conv.js';
import * as shapeApi from './shape.js';
import * as indexingApi from './indexing.js';
import * as paddingApi from './padding.js';
import * as linalgApi from './linalg.js';
import * as functionApi from './function.js';
import * as gradientsApi from './gradients.js';
import * as rnnApi from './rnn.js';
import * as ctcApi from './ctc.js';
import * as controlApi from './control.js';
import * as numericApi from './numeric.js';
import * as activationsApi from './activations.js';
import * as nnApi from './nn.js';
import * as lossesApi from './losses.js';
import * as randomApi from './random.js';
import * as miscApi from './misc.js';
import * as sessionApi from './session.js';
import * as inspectApi from './inspect.js';
import * as convMoreApi from './conv-more.js';
import * as ctcDecodeApi from './ctc-decode.js';
import { evaluateTensor } from './eval.js';
import { compileFunction } from './function.js';
import { switchFn } from './control.js';
import { variance } from './numeric.js';

export {
  backend,
  epsilon,
  set_epsilon,
  floatx,
  set_floatx,
  image_data_format,
  set_image_data_format,
  image_dim_ordering,
  set_image_dim_ordering,
  get_uid,
  reset_uids,
} from './config.js';
export { set_learning_phase, clear_session } from './state.js';
export {
  int_shape,
  ndim,
  dtype,
  count_params,
  get_variable_shape,
  is_keras_tensor,
  is_sparse,
  set_value,
  batch_set_value,
} from './tensors.js';
export { get_value, get_value_async, batch_get_value } from './eval.js';
export { Update } from './function.js';
export { symbolic, eager } from './misc.js';
export { get_session, set_session, Session, manual_variable_initialization } from './session.js';
export { is_tensor, is_variable, is_placeholder, normalize_data_format } from './inspect.js';

export const { learning_phase } = tracedAll(stateApi);
export const { name_scope } = tracedAll(stateApi, { callbacks: true });
export const {
  placeholder,
  variable,
  constant,
  zeros,
  ones,
  eye,
  zeros_like,
  ones_like,
  identity,
  cast,
  cast_to_floatx,
  shape,
  to_dense,
} = tracedAll(tensorsApi);
export const {
  add,
  subtract,
  multiply,
  divide,
  mod,
  negative,
  floor,
  ceil,
  maximum,
  minimum,
  equal,
  not_equal,
  greater,
  greater_equal,
  less,
  less_equal,
  abs,
  sqrt,
  exp,
  log,
  round,
  sign,
  square,
  sin,
  cos,
  pow,
  sum,
  prod,
  mean,
  max,
  min,
  any,
  all,
  argmax,
  argmin,
  dot,
} = tracedAll(mathApi);
export const { conv1d, conv2d, conv3d, conv2d_transpose, deconv2d, separable_conv2d, pool2d, pool3d } =
  tracedAll(convApi);
export const {
  transpose,
  permute_dimensions,
  reshape,
  repeat,
  repeat_elements,
  tile,
  flatten,
  batch_flatten,
  expand_dims,
  squeeze,
  pattern_broadcast,
} = tracedAll(shapeApi);
export const { slice, slice_along, reverse, concatenate, stack, gather, one_hot, arange } = tracedAll(indexingApi);
export const {
  temporal_padding,
  asymmetric_temporal_padding,
  spatial_2d_padding,
  spatial_3d_padding,
  asymmetric_spatial_2d_padding,
  resize_images,
  resize_volumes,
} = tracedAll(paddingApi);
export const { batch_dot } = tracedAll(linalgApi);
export const { update, update_add, update_sub, moving_average_update } = tracedAll(functionApi);
export const { gradients, stop_gradient } = tracedAll(gradientsApi);
export const { rnn } = tracedAll(rnnApi, { callbacks: true });
export const {
  ctc_batch_cost,
  ctc_interleave_blanks,
  ctc_create_skip_idxs,
  ctc_update_log_p,
  ctc_path_probs,
  ctc_cost,
} = tracedAll(ctcApi);
export const { map_fn, foldl, foldr, in_train_phase, in_test_phase } = tracedAll(controlApi, { callbacks: true });
export const { logsumexp, std, cumsum, cumprod, clip } = tracedAll(numericApi);
export const { relu, elu, softmax, softplus, softsign, sigmoid, hard_sigmoid } = tracedAll(activationsApi);
export const { l2_normalize, bias_add, batch_normalization, normalize_batch_in_training, in_top_k } = tracedAll(nnApi);
export const { categorical_crossentropy, sparse_categorical_crossentropy, binary_crossentropy } = tracedAll(lossesApi);
export const {
  random_normal,
  random_uniform,
  random_binomial,
  truncated_normal,
  random_uniform_variable,
  random_normal_variable,
  dropout,
} = tracedAll(randomApi);
export const { print_tensor } = tracedAll(miscApi);
export const { control_dependencies } = tracedAll(sessionApi, { callbacks: true });
export const { size } = tracedAll(inspectApi);
export const { depthwise_conv2d, separable_conv1d, conv3d_transpose, local_conv1d, local_conv2d } =
  tracedAll(convMoreApi);
export const { ctc_decode, ctc_label_dense_to_sparse } = tracedAll(ctcDecodeApi);

const eval_t = traced('K.eval', evaluateTensor);
export { eval_t as eval };
export { compileFunction as function };
const switch_t = traced('K.switch', switchFn, true);
export { switch_t as switch };
const var_t = traced('K.var', variance);
export { var_t as var };
export const tanh = traced('K.tanh', unary('tanh', 'tanh')); // one elementwise op: no builder of its own

export type { ConvOptions } from './conv.js';
export type { FunctionOptions } from './function.js';
export type { StepFunction, RnnOptions } from './rnn.js';
export type { TensorLike } from './args.js';
export type { FeedDict } from './session.js';
export type { SparseTensor } from './ctc-decode.js';
