const { purgeStackData } = require('../../tools/devstack/purge');

module.exports = async () => {
  const stack = globalThis.__STACK__;
  if (!stack) return;
  await stack.stop();
  if (!process.env.CP_KEEP_TEST_DATA) await purgeStackData(stack.prefix, stack.backing);
};
