// Stands in for stylesheet and image imports, which jsdom cannot load.
module.exports = {};
