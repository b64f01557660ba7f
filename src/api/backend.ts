// The Keras backend namespace: `import { backend as K } from 'theanine'`.
// Names are Keras' own; reserved words are exported under their Keras names all the same.
import './methods.js';

export {
  backend, epsilon, set_epsilon, floatx, set_floatx, image_data_format, set_image_data_format,
  image_dim_ordering, set_image_dim_ordering, get_uid, reset_uids,
} from './config.js';
export { learning_phase, set_learning_phase, clear_session, name_scope } from './state.js';
export {
  placeholder, variable, constant, zeros, ones, eye, zeros_like, ones_like, identity, cast, cast_to_floatx,
  int_shape, ndim, dtype, shape, count_params, get_variable_shape, is_keras_tensor, is_sparse, to_dense,
  get_value, batch_get_value, set_value, batch_set_value, evaluateTensor as eval,
} from './tensors.js';
export {
  add, subtract, multiply, divide, mod, negative, floor, ceil, maximum, minimum,
  equal, not_equal, greater, greater_equal, less, less_equal,
  abs, sqrt, exp, log, round, sign, square, sin, cos, pow,
  sum, prod, mean, max, min, any, all, argmax, argmin, dot,
} from './math.js';
export { conv1d, conv2d, conv3d, conv2d_transpose, deconv2d, separable_conv2d, pool2d, pool3d } from './conv.js';
export type { ConvOptions } from './conv.js';
export {
  transpose, permute_dimensions, reshape, repeat, repeat_elements, tile, flatten, batch_flatten, expand_dims, squeeze, pattern_broadcast,
} from './shape.js';
export { slice, slice_along, reverse, concatenate, stack, gather, one_hot, arange } from './indexing.js';
export {
  temporal_padding, asymmetric_temporal_padding, spatial_2d_padding, spatial_3d_padding, asymmetric_spatial_2d_padding,
  resize_images, resize_volumes,
} from './padding.js';
export { batch_dot } from './linalg.js';
export { update, update_add, update_sub, moving_average_update, compileFunction as function, Update } from './function.js';
export { gradients, stop_gradient } from './gradients.js';
export type { FunctionOptions } from './function.js';
export { rnn } from './rnn.js';
export type { StepFunction, RnnOptions } from './rnn.js';
export { ctc_batch_cost, ctc_interleave_blanks, ctc_create_skip_idxs, ctc_update_log_p, ctc_path_probs, ctc_cost } from './ctc.js';
export { map_fn, foldl, foldr, switchFn as switch, in_train_phase, in_test_phase } from './control.js';
export type { TensorLike } from './args.js';
export { logsumexp, variance as var, std, cumsum, cumprod, clip } from './numeric.js';
export { relu, elu, softmax, softplus, softsign, sigmoid, hard_sigmoid, tanh } from './activations.js';
export { l2_normalize, bias_add, batch_normalization, normalize_batch_in_training, in_top_k } from './nn.js';
export { categorical_crossentropy, sparse_categorical_crossentropy, binary_crossentropy } from './losses.js';
export {
  random_normal, random_uniform, random_binomial, truncated_normal, random_uniform_variable, random_normal_variable, dropout,
} from './random.js';
export { print_tensor, symbolic, eager } from './misc.js';
export { get_session, set_session, Session, control_dependencies, manual_variable_initialization } from './session.js';
export type { FeedDict } from './session.js';
export { is_tensor, is_variable, is_placeholder, size, normalize_data_format } from './inspect.js';
export { depthwise_conv2d, separable_conv1d, conv3d_transpose, local_conv1d, local_conv2d } from './conv_more.js';
export { ctc_decode, ctc_label_dense_to_sparse } from './ctc_decode.js';
export type { SparseTensor } from './ctc_decode.js';
