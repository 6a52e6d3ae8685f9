// Every figure in a page opens at full size on click: wrap images that are not links already.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll(".bd-article img").forEach((img) => {
    if (img.closest("a")) return;
    const link = document.createElement("a");
    link.href = img.src;
    link.className = "figure-link";
    link.title = "Open the figure at full size";
    img.parentNode.insertBefore(link, img);
    link.appendChild(img);
  });
});
