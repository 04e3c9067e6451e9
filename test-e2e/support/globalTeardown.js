module.exports = async () => {
  await globalThis.__STACK__?.stop();
};
