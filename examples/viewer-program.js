// A program for `npx theanine viz examples/viewer-program.js`: K and rand are in scope (the
// viewer provides them); it exports concrete inputs by name, a loss built from one tensor per input (in that order), and
// the inputs to differentiate. Here: a logistic regression's binary crossentropy.
export default {
  inputs: {
    x: rand([5, 3], 11),
    y: [[1], [0], [0], [1], [1]],
    w: [[0.2], [-0.1], [0.4]],
    b: [0.05],
  },
  wrt: ['w', 'b'],
  loss: (x, y, w, b) => K.mean(K.binary_crossentropy(K.sigmoid(K.add(K.dot(x, w), b)), y)),
};
